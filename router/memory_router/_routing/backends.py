"""The backends of one router: their validated settings, each backend built on first use
with the embedding setup they share, and everything closed together."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._backend import Backend, BackendContext, BackendSpec
from .._config.config import Config, ensure_dir
from .._config.settings import parse_settings, unset_secret_error
from .._embedding.embedder import Embedder
from .._embedding.providers import ProviderSpec
from .._embedding.setup import EmbeddingSetup, unavailable_status
from .._exceptions import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    InvalidInput,
    MemoryRouterError,
    NotFound,
)
from .._types import BackendStatus, EmbeddingStatus, IndexFingerprint
from .calls import contained


def validate_backend_settings(config: Config, specs: Mapping[str, BackendSpec]) -> dict[str, Any]:
    """Each installed backend's validated ``[backends.<name>]`` settings, by name.

    Raises :class:`ConfigError` for a chain or table naming a backend that is not
    installed, an empty chain, or a table for a backend that takes no settings.
    """
    source = config.file or "<defaults>"
    chain = config.router.chain
    unknown = [n for n in (*chain, *config.backends) if n not in specs]
    if unknown:
        installed = ", ".join(sorted(specs)) or "none"
        in_chain = unknown[0] in chain
        raise ConfigError(
            f"no backend named {unknown[0]!r} is installed (installed: {installed})",
            path=source,
            table="router" if in_chain else "backends",
            key="chain" if in_chain else unknown[0],
        )
    if not chain:
        raise ConfigError(
            "the chain needs at least one backend", path=source, table="router", key="chain"
        )
    settings: dict[str, Any] = {}
    for name, spec in specs.items():
        table = config.backends.get(name)
        if spec.settings is not None:
            settings[name] = parse_settings(
                spec.settings, table, path=source, table=f"backends.{name}"
            )
        elif table:
            raise ConfigError(
                f"backend {name!r} takes no settings", path=source, table=f"backends.{name}"
            )
    return settings


def closed_error() -> InvalidInput:
    """What every operation of a closed router raises."""
    return InvalidInput("this router is closed; build a new one", key="router")


class Backends:
    """The installed backends (``specs``) and the embedding setup, built on first use.

    ``providers()`` gives the embedding provider specs (asked when the setup is built).
    ``closing`` is set once :meth:`close` starts: a closed router builds nothing more,
    and running syncs end at their next progress report (see :mod:`.sync`).
    """

    def __init__(
        self,
        config: Config,
        specs: Mapping[str, BackendSpec],
        providers: Callable[[], Mapping[str, ProviderSpec]],
    ) -> None:
        self.config = config
        self.specs = dict(specs)
        self.settings = validate_backend_settings(config, self.specs)
        self.closing = threading.Event()
        self._providers = providers
        self._built: dict[str, Backend] = {}
        self._setup: EmbeddingSetup | None = None
        self._lock = threading.RLock()

    @property
    def closed(self) -> bool:
        return self.closing.is_set()

    def check_open(self) -> None:
        if self.closed:
            raise closed_error()

    def check_names(self, names: Iterable[str]) -> None:
        """Refuse a name no installed backend has (before any folder is made under it)."""
        for name in names:
            if name not in self.specs:
                raise NotFound(
                    f"no backend named {name!r}",
                    key=name,
                    hint=f"use one of: {', '.join(sorted(self.specs))}",
                )

    # -- the embedding setup ----------------------------------------------------------

    def embedding_setup(self) -> EmbeddingSetup:
        """The embedding setup, built on the first call (the only step that picks a provider).

        Raises :class:`ConfigError` or :class:`EmbeddingError` when the configured
        provider cannot be built.
        """
        with self._lock:
            if self._setup is None:
                self._setup = EmbeddingSetup.build(self.config, self._providers())
            return self._setup

    @property
    def built_setup(self) -> EmbeddingSetup | None:
        """The embedding setup if it was built already (reading it builds nothing)."""
        return self._setup

    @property
    def embedder(self) -> Embedder | None:
        """The shared embedder, or ``None`` in keyword-only mode."""
        return self.embedding_setup().embedder

    def fingerprint(self) -> IndexFingerprint:
        return self.embedding_setup().fingerprint(self.config)

    def embedding_status(self, *, deep: bool) -> EmbeddingStatus:
        try:
            setup = self.embedding_setup()
        except MemoryRouterError as error:
            return unavailable_status(self.config, error)
        return setup.status(deep=deep)

    # -- the backends -----------------------------------------------------------------

    def unset_secret(self, name: str) -> ConfigError | None:
        """The error for a secret of ``[backends.<name>]`` whose variable or file is unset."""
        return unset_secret_error(
            self.settings.get(name),
            path=self.config.file or "<defaults>",
            table=f"backends.{name}",
        )

    def get(self, name: str) -> Backend:
        """The backend called ``name``, built on first use."""
        self.check_open()
        with self._lock:
            if name not in self._built:
                self._built[name] = self._build(name)
            return self._built[name]

    def _build(self, name: str) -> Backend:
        self.check_names((name,))
        spec = self.specs[name]
        unset = self.unset_secret(name)
        if unset is not None:  # not "no key": a store would try other credentials
            raise BackendUnavailable(unset.message, backend=name, hint=unset.hint)
        # A read-only state folder still answers: the backend refuses only writes.
        state_dir = ensure_dir(
            self.config.agent_state_path / name, key="state_dir", must_write=False
        )
        context = BackendContext(
            name=name,
            config=self.config,
            settings=self.settings.get(name),
            state_dir=state_dir,
            embedder=self.embedder,
        )
        try:
            with contained(name, "starting"):
                return spec.factory(context)
        except BackendError as error:
            if error.backend == name and not isinstance(error, BackendUnavailable):
                raise BackendUnavailable(
                    f"backend {name!r} failed to start: {error.message}", backend=name
                ) from error
            raise

    def statuses(self, *, deep: bool) -> tuple[BackendStatus, ...]:
        """Each backend of the chain's status; one that cannot say is reported unavailable."""
        found = []
        for name in self.config.router.chain:
            try:
                with contained(name, "status"):
                    found.append(self.get(name).status(deep=deep))
            except MemoryRouterError as error:
                found.append(BackendStatus(name=name, available=False, error=error.message))
        return tuple(found)

    # -- closing ----------------------------------------------------------------------

    def close(self) -> bool:
        """Set :attr:`closing` and close the backends built (killing their children);
        ``False`` when it was closed already. The embedding setup stays open for the
        syncs still running (:meth:`close_embedding`)."""
        if self.closing.is_set():
            return False
        self.closing.set()
        # Not under the lock: a backend starting now (a sidecar) must not hold up closing.
        built = list(self._built.items())
        self._built.clear()
        for name, backend in built:
            try:
                with contained(name, "close"):
                    backend.close()
            except MemoryRouterError:
                pass  # closing the others matters more than this backend's complaint
        return True

    def close_embedding(self) -> None:
        """Close the embedder and the embedding cache (after the backends and their syncs)."""
        if self._setup is not None:
            self._setup.close()
