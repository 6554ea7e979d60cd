"""The ``qmd`` backend: QMD (``@tobilu/qmd``, Node >= 22) as a supervised sidecar.

Install QMD with ``scripts/install-qmd.sh``; configure it under ``[backends.qmd]``
(:class:`QmdSettings`) and put ``"qmd"`` in ``[router] chain``. The backend's modules load
when it is first built, not when the plugin is discovered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memory_router import hookimpl
from memory_router.kit import Backend, BackendContext, BackendSpec, lazy_exports

from ._settings import MODES, QmdModels, QmdSettings

if TYPE_CHECKING:
    from ._backend import QmdBackend

__all__ = ["QmdBackend", "QmdModels", "QmdSettings", "register_backends"]
__getattr__ = lazy_exports(__name__, {"QmdBackend": "._backend"})


def create(context: BackendContext) -> Backend:
    """The backend factory: imports the sidecar machinery on first use."""
    from ._backend import QmdBackend

    return QmdBackend(context)


@hookimpl
def register_backends(register: Callable[[BackendSpec], None]) -> None:
    register(
        BackendSpec(
            name="qmd",
            factory=create,
            settings=QmdSettings,
            description="QMD CLI as a sidecar: BM25 search, vsearch, query (Node >= 22)",
            modes=MODES,
        )
    )
