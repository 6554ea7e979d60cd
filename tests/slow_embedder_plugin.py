"""A plugin module for child processes: the hashing embedder, slowed down.

``MEMORY_ROUTER_PLUGIN_MODULES=slow_embedder_plugin`` (with ``tests/`` on ``PYTHONPATH``)
registers ``provider = "slow"``: each batch of documents takes ``SLOW_EMBED_S`` seconds,
so a test can start a second process while the first is surely still building.
``SLOW_BATCH_TOKENS`` sets the batch size (in the router's token estimate), and
``SLOW_EMBED_LOG`` names a file that gets a line per batch embedded.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

from memory_router import hookimpl
from memory_router.kit import ProviderContext, ProviderSpec
from memory_router.testing import HashingEmbedder


class SlowEmbedder(HashingEmbedder):
    id = "slow"
    max_batch_tokens = int(os.environ.get("SLOW_BATCH_TOKENS", "8000"))

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        time.sleep(float(os.environ.get("SLOW_EMBED_S", "3")))
        log = os.environ.get("SLOW_EMBED_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as file:
                file.write(f"{len(texts)}\n")
        return super().embed_documents(texts)


@hookimpl
def register_embedding_providers(register: Callable[[ProviderSpec], None]) -> None:
    def factory(context: ProviderContext, model: str) -> SlowEmbedder:
        return SlowEmbedder()

    register(ProviderSpec(name="slow", factory=factory))
