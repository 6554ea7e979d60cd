"""memory-router: persistent, searchable memory for AI agents.

Plain Markdown files in a workspace are the memory; indexes are derived from them. One
:class:`Router` sends search/get/store/forget/sync/status to a backend chosen by
configuration, falling back through a chain when one fails.

The public API, by audience:

- ``memory_router`` (here): using the library — :class:`Router`, :class:`Config` and
  :func:`load_config`, the values the router returns, the errors it raises,
  :data:`hookimpl` and ``__version__``;
- :mod:`memory_router.kit`: writing a backend or a plugin — the backend contract, the
  embedding-provider contract, search and fusion helpers, process and wait utilities;
- :mod:`memory_router.agent`: hosting an agent — auto-capture, the recall block and the
  pre-compaction memory flush, with their settings and results.

The ``if TYPE_CHECKING:`` imports below are the export list, written once: type checkers
read them, and :func:`~memory_router._util.lazy.public_api` derives ``__all__`` and a lazy
``__getattr__`` from the same lines, so ``import memory_router`` and a plugin's ``from
memory_router import hookimpl`` load only the modules they use (PEP 562). The names that
moved to ``kit`` and ``agent`` still resolve here, with a :class:`DeprecationWarning`,
until the next minor release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._util.lazy import public_api

__version__ = "0.1.0"

if TYPE_CHECKING:
    from ._config.config import Config as Config
    from ._config.config import load_config as load_config
    from ._entries.book import ForgetResult as ForgetResult
    from ._entries.book import RecallResult as RecallResult
    from ._entries.book import StoreResult as StoreResult
    from ._exceptions import BackendError as BackendError
    from ._exceptions import BackendTimeout as BackendTimeout
    from ._exceptions import BackendUnavailable as BackendUnavailable
    from ._exceptions import CircuitOpen as CircuitOpen
    from ._exceptions import ConfigError as ConfigError
    from ._exceptions import EmbeddingError as EmbeddingError
    from ._exceptions import IndexBusy as IndexBusy
    from ._exceptions import InvalidInput as InvalidInput
    from ._exceptions import MemoryRouterError as MemoryRouterError
    from ._exceptions import NotFound as NotFound
    from ._exceptions import PluginError as PluginError
    from ._exceptions import ServiceUnreachable as ServiceUnreachable
    from ._exceptions import Unsupported as Unsupported
    from ._migrate.migration import MigrationReport as MigrationReport
    from ._migrate.migration import migrate as migrate
    from ._progress_types import Progress as Progress
    from ._progress_types import no_progress as no_progress
    from ._router import Router as Router
    from ._types import CATEGORIES as CATEGORIES
    from ._types import BackendStatus as BackendStatus
    from ._types import BreakerState as BreakerState
    from ._types import Category as Category
    from ._types import EmbeddingStatus as EmbeddingStatus
    from ._types import Entry as Entry
    from ._types import EntryMatch as EntryMatch
    from ._types import Explain as Explain
    from ._types import Fallback as Fallback
    from ._types import FileText as FileText
    from ._types import Hit as Hit
    from ._types import IndexFingerprint as IndexFingerprint
    from ._types import RouterStatus as RouterStatus
    from ._types import SearchResponse as SearchResponse
    from ._types import Source as Source
    from ._types import SyncReport as SyncReport
    from .hookspecs import hookimpl as hookimpl
else:
    __all__, __getattr__, __dir__ = public_api(
        __name__, extra=["__version__"], moved_to=["memory_router.kit", "memory_router.agent"]
    )
