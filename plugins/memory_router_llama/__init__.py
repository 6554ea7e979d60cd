"""The ``local`` embedding provider: a GGUF model through llama-cpp-python (extra ``local``).

``[embedding.local] model_path`` is a ``.gguf`` file or an ``hf:user/repo/file.gguf`` URI,
downloaded with resume into ``model_cache_dir``. In ``auto`` mode it is tried first
(priority 10), but only when ``model_path`` is an existing local file. The provider's
modules (httpx, numpy) load when it is built, not when the plugin is discovered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memory_router import hookimpl
from memory_router.kit import EmbeddingProvider, ProviderContext, ProviderSpec, lazy_exports

if TYPE_CHECKING:
    from ._convert import convert_bert
    from ._download import endpoint, resolve_model
    from ._provider import LlamaProvider, truncate

AUTO_PRIORITY = 10

__all__ = [
    "AUTO_PRIORITY",
    "LlamaProvider",
    "convert_bert",
    "create",
    "endpoint",
    "resolve_model",
    "truncate",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "convert_bert": "._convert",
        "endpoint": "._download",
        "resolve_model": "._download",
        "LlamaProvider": "._provider",
        "truncate": "._provider",
    },
)


def create(context: ProviderContext, model: str) -> EmbeddingProvider:
    """The ``local`` factory (see :func:`._provider.create`)."""
    from ._provider import create

    return create(context, model)


@hookimpl
def register_embedding_providers(register: Callable[[ProviderSpec], None]) -> None:
    register(
        ProviderSpec(
            name="local",
            factory=create,
            auto_priority=AUTO_PRIORITY,
            description="a GGUF embedding model through llama-cpp-python (extra `local`)",
        )
    )
