"""The ``qmd`` backend: QMD (``@tobilu/qmd``, Node >= 22) as a supervised sidecar.

Install QMD with ``scripts/install-qmd.sh``; configure it under ``[backends.qmd]``
(:class:`QmdSettings`) and put ``"qmd"`` in ``[router] chain``.
"""

from __future__ import annotations

from collections.abc import Callable

from memory_router import BackendSpec, hookimpl

from ._backend import QmdBackend
from ._settings import MODES, QmdModels, QmdSettings

__all__ = ["QmdBackend", "QmdModels", "QmdSettings", "register_backends"]


@hookimpl
def register_backends(register: Callable[[BackendSpec], None]) -> None:
    register(
        BackendSpec(
            name="qmd",
            factory=QmdBackend,
            settings=QmdSettings,
            description="QMD CLI as a sidecar: BM25 search, vsearch, query (Node >= 22)",
            modes=MODES,
        )
    )
