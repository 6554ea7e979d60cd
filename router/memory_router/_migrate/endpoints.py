"""Where a migration reads and writes: configured backends, or index files
(``--from-path``, ``--to-path``).

An index file is written by the SQLite backend (its file is the seed schema that
``--from-path`` reads), started for the occasion with ``[backends.sqlite]`` settings
whose ``path`` is the file; it is not part of the chain and is closed afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .._backend import Backend, BackendContext
from .._config.config import ensure_dir
from .._config.settings import parse_settings
from .._embedding.embedder import sha256_text
from .._exceptions import InvalidInput, Unsupported
from .._routing.calls import contained
from .._types import Chunk
from .indexfile import IndexFile

if TYPE_CHECKING:
    from .._router import Router

FILE_BACKEND = "sqlite"


class Source(Protocol):
    """What a migration reads from: a backend, or an :class:`IndexFile`."""

    name: str

    def index_fingerprint(self) -> Mapping[str, Any] | None: ...

    def export_chunks(self) -> Iterator[Chunk]: ...


@dataclass(frozen=True, slots=True)
class Target:
    """The backend a migration writes into; ``key`` names its checkpoint, ``label`` is
    shown in reports, and an ``owned`` one (an index file) is closed afterwards."""

    backend: Backend
    key: str
    label: str
    owned: bool = False

    def close(self) -> None:
        if self.owned:
            self.backend.close()


def open_target(router: Router, name: str | None, path: str | None) -> Target:
    """The configured backend ``name``, or a SQLite index file at ``path``."""
    if (name is None) == (path is None):
        raise InvalidInput(
            "give a target backend or an index file path, not both or neither",
            key="to",
            hint="use --to NAME or --to-path FILE",
        )
    if name is not None:
        return Target(router.backend(name), name, name)
    assert path is not None
    resolved = Path(path).expanduser().resolve()
    return Target(
        file_backend(router, resolved), target_key(None, path), f"file:{resolved}", owned=True
    )


def target_key(name: str | None, path: str | None) -> str:
    """The name of a target's checkpoint: the backend's name, or one for the index file."""
    if path is None:
        assert name is not None
        return name
    return f"file-{sha256_text(str(Path(path).expanduser().resolve()))[:16]}"


def file_backend(router: Router, path: Path) -> Backend:
    """A SQLite backend writing the index file ``path`` (created when missing)."""
    spec = router.backend_specs.get(FILE_BACKEND)
    if spec is None or spec.settings is None:
        raise Unsupported(
            "--to-path writes a SQLite index file, and the sqlite backend is not installed",
            backend=FILE_BACKEND,
            hint="name a configured backend with --to instead",
        )
    if path.is_dir():
        raise InvalidInput(
            f"{path} is a folder, not an index file",
            key="to_path",
            hint="give --to-path the file to write, e.g. backup/memory.sqlite",
        )
    config = router.config
    table = {**config.backends.get(FILE_BACKEND, {}), "path": str(path)}
    settings: Any = parse_settings(
        spec.settings, table, path=str(config.file or "<defaults>"), table="backends.sqlite"
    )
    context = BackendContext(
        name=FILE_BACKEND,
        config=config,
        settings=settings,
        state_dir=ensure_dir(config.agent_state_path / "migrations", key="state_dir"),
        embedder=router.embedder,
    )
    with contained(FILE_BACKEND, "starting"):
        return spec.factory(context)


def open_source(router: Router, name: str | None, path: str | None) -> tuple[Source, bool]:
    """The source and whether it is a file to close afterwards."""
    if (name is None) == (path is None):
        raise InvalidInput("give a source backend or an index file path, not both or neither")
    if path is not None:
        return IndexFile(path), True
    assert name is not None
    spec = router.backend_specs.get(name)
    factory = spec.factory if spec else None
    if (
        isinstance(factory, type)
        and getattr(factory, "export_chunks", None) is Backend.export_chunks
    ):
        raise _refuse(name)  # known before starting it (QMD would start a child)
    backend = router.backend(name)
    try:
        backend.export_chunks()  # the default raises at once; real ones are generators
    except Unsupported:
        raise _refuse(name) from None
    return backend, False


def _refuse(name: str) -> Unsupported:
    return Unsupported(
        f"backend {name!r} cannot be migrated from: its index is its own (no chunks with"
        " vectors to export)",
        backend=name,
        hint="migrate from the Markdown instead: memory-router index --backend TARGET"
        " builds the target from the workspace files",
    )


def check_distinct(
    source: str | None, target: str | None, source_path: str | None, target_path: str | None
) -> None:
    """Refuse a migration from a backend (or index file) into itself."""
    what = "backend" if target else "index file"
    same = source is not None and source == target
    if source_path is not None and target_path is not None:
        same = Path(source_path).expanduser().resolve() == Path(target_path).expanduser().resolve()
    if same:
        raise InvalidInput(
            f"source and target are the same {what} ({target or target_path})",
            key="to",
            hint="name the target with --to or --to-path (the default is the chain's first"
            " backend)",
        )
