"""The ``local`` embedding provider: a GGUF model through llama-cpp-python (extra ``local``).

``[embedding.local] model_path`` is a ``.gguf`` file or an ``hf:user/repo/file.gguf`` URI,
downloaded with resume into ``model_cache_dir``. In ``auto`` mode it is tried first
(priority 10), but only when ``model_path`` is an existing local file.
"""

from __future__ import annotations

from collections.abc import Callable

from memory_router import ProviderSpec, hookimpl

from ._convert import convert_bert
from ._download import endpoint, resolve_model
from ._provider import LlamaProvider, create, truncate

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
