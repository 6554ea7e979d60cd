"""The exception tree of memory-router.

Every error the library raises on purpose derives from :class:`MemoryRouterError`::

    MemoryRouterError
     ├── ConfigError          malformed or invalid configuration (.path, .table, .key)
     ├── PluginError          a plugin failed to load or registered something twice
     ├── NotFound             a named thing does not exist (.key)
     ├── InvalidInput         a caller passed a bad value (.key)
     ├── EmbeddingError       an embedding provider failed (.provider, .transient)
     ├── IndexBusy            another process is syncing or migrating this index (.pid)
     ├── ServiceUnreachable   a running `memory-router serve` did not answer
     └── BackendError         a backend failed (.backend)
          ├── BackendUnavailable   it cannot serve now (not installed, crashed, circuit open)
          │    └── CircuitOpen     it was not asked: its circuit breaker is open
          ├── BackendTimeout       it did not answer within its deadline
          └── Unsupported          it does not implement this capability

Third-party exceptions (sqlite3, subprocess, httpx, lancedb…) are translated once, at
the edge of the backend or provider that met them; none leaves it untranslated.

``IndexBusy`` and ``ServiceUnreachable`` are no backend failures: the router answers from
the index there is when another process holds the index lock, and the CLI searches in
its own process when the server does not answer; neither opens a circuit breaker.
``CircuitOpen`` is a ``BackendUnavailable``, so whoever handles "cannot serve now"
handles it, but the router does not count it as a new failure of the backend.
"""

from __future__ import annotations


class MemoryRouterError(Exception):
    """Root of every error memory-router raises on purpose.

    ``hint`` says what the user can do next; the CLI prints it after the message.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class ConfigError(MemoryRouterError):
    """The configuration is malformed or invalid.

    ``path`` is the file (or ``"<env>"``/``"<defaults>"``), ``table`` the dotted TOML
    table and ``key`` the offending key, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        table: str | None = None,
        key: str | None = None,
        hint: str | None = None,
    ) -> None:
        where = ", ".join(
            part
            for part in (
                f"file {path}" if path else "",
                f"table [{table}]" if table else "",
                f"key {key!r}" if key else "",
            )
            if part
        )
        super().__init__(f"{where}: {message}" if where else message, hint=hint)
        self.path = path
        self.table = table
        self.key = key


class PluginError(MemoryRouterError):
    """A plugin could not be loaded, or registered a name that is invalid or taken."""


class NotFound(MemoryRouterError):
    """A named thing (backend, provider, entry, file) does not exist. ``key`` names it."""

    def __init__(self, message: str, *, key: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.key = key


class InvalidInput(MemoryRouterError):
    """A caller passed a value that cannot be used. ``key`` names the argument."""

    def __init__(self, message: str, *, key: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.key = key


class EmbeddingError(MemoryRouterError):
    """An embedding provider failed. ``provider`` is its id; ``transient`` says a retry may help."""

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        transient: bool = False,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.provider = provider
        self.transient = transient


class BackendError(MemoryRouterError):
    """A backend failed. ``backend`` is its configured name."""

    def __init__(
        self, message: str, *, backend: str | None = None, hint: str | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.backend = backend


class BackendUnavailable(BackendError):
    """The backend cannot serve now: not installed, crashed, misconfigured or circuit open."""


class BackendTimeout(BackendError):
    """The backend did not answer within its deadline."""


class Unsupported(BackendError):
    """The backend does not implement this optional capability."""


class CircuitOpen(BackendUnavailable):
    """The backend was not asked: its circuit is open (not a new failure of its own)."""


class IndexBusy(MemoryRouterError):
    """Another process holds a lock of this agent — it is syncing an index, or migrating
    into one — and did not let go in time. ``pid`` is that process's id, when known."""

    def __init__(self, message: str, *, pid: int | None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.pid = pid


class ServiceUnreachable(MemoryRouterError):
    """The server did not answer at all (refused, reset, timed out): use another way."""
