"""The helpers of :mod:`memory_router.testing`, in a module of their own so the contract
suite (``_contract``) imports them without importing its own package (no import circle)."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory_router import Config, hookimpl, load_config
from memory_router.kit import Backend, Chunk, EmbeddingProvider, ProviderContext, ProviderSpec

_WORD = re.compile(r"\w+")


@functools.lru_cache(maxsize=1 << 17)
def _bucket(token: str, dims: int) -> tuple[int, float]:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest[:4], "little") % dims, 1.0 if digest[4] & 1 else -1.0


class HashingEmbedder(EmbeddingProvider):
    """Feature hashing: each lower-cased ``\\w+`` token adds ±1 to one of ``dims`` buckets.

    The vector is L2-normalised; a text without tokens gives the zero vector. Texts that
    share words are similar, so hybrid search behaves plausibly in tests.
    """

    id = "hash"
    model = "hash-384"

    def __init__(self, dims: int = 384) -> None:
        self._dims = dims
        if dims != 384:
            self.model = f"hash-{dims}"

    @property
    def dims(self) -> int:
        return self._dims

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vector(t) for t in texts]

    def vector(self, text: str) -> list[float]:
        array = np.zeros(self._dims, dtype=np.float32)
        for token in _WORD.findall(text.lower()):
            index, sign = _bucket(token, self._dims)
            array[index] += sign
        norm = float(np.linalg.norm(array))
        result: list[float] = (array / norm if norm > 0 else array).tolist()
        return result


def _hash_factory(context: ProviderContext, model: str) -> EmbeddingProvider:
    return HashingEmbedder()


@hookimpl
def register_embedding_providers(register: Callable[[ProviderSpec], None]) -> None:
    """Register ``hash``: explicit only (``auto_priority=None``), for tests and benchmarks."""
    register(
        ProviderSpec(
            name="hash",
            factory=_hash_factory,
            auto_priority=None,
            description="deterministic feature-hashing embedder for tests (384 dims)",
        )
    )


def write_workspace(root: str | Path, files: Mapping[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root`` (folders created); returns ``root``."""
    base = Path(root)
    base.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return base


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _toml_tables(data: Mapping[str, Any], prefix: str = "") -> list[str]:
    lines: list[str] = []
    scalars = {k: v for k, v in data.items() if not isinstance(v, Mapping)}
    if prefix and scalars:
        lines.append(f"[{prefix}]")
    lines.extend(f"{k} = {_toml_value(v)}" for k, v in scalars.items())
    for key, value in data.items():
        if isinstance(value, Mapping):
            lines.extend(_toml_tables(value, f"{prefix}.{key}" if prefix else key))
    return lines


def write_config(path: str | Path, data: Mapping[str, Any]) -> Path:
    """Write a nested dict of strings, numbers, booleans and arrays as a TOML file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(_toml_tables(data)) + "\n", encoding="utf-8")
    return target


def router_config(
    tmp_path: str | Path,
    workspace: str | Path,
    *,
    backend: str,
    embedding: str = "none",
    settings: Mapping[str, Any] | None = None,
    **tables: Any,
) -> Config:
    """A config for ``chain = [backend]`` written to ``tmp_path`` and loaded (env ignored).

    State goes to ``tmp_path/state``; ``embedding`` is the provider name (``"none"`` for
    keyword-only); ``tables`` are extra top-level keys or tables (``query={...}``).
    """
    base = Path(tmp_path)
    data: dict[str, Any] = {
        "workspace": str(workspace),
        "state_dir": str(base / "state"),
        "embedding": {"provider": embedding},
        "router": {"chain": [backend], "fallback": "none"},
        **tables,
    }
    if settings:
        data["backends"] = {backend: dict(settings)}
    index = len(list(base.glob("config-*.toml")))
    return load_config(write_config(base / f"config-{index}.toml", data), environ={})


def publish_chunks(
    backend: Backend, chunks: Iterable[Chunk], *, fingerprint: Mapping[str, Any]
) -> int:
    """Make ``chunks`` the whole index of ``backend`` through the path ``migrate`` takes.

    A fresh :meth:`Backend.stage` (an earlier copy discarded), :meth:`Staging.write` in
    batches of its ``batch_size``, then :meth:`Staging.publish`; a failure discards the
    copy and leaves the live index as it was. ``fingerprint`` is what the index records
    (``router.fingerprint()`` for one the router's syncs keep). Returns the chunks the
    copy held. Raises :class:`Unsupported` for a backend without staging (QMD).
    """
    staging = backend.stage(fingerprint=fingerprint, resume=False)
    try:
        batch: list[Chunk] = []
        for chunk in chunks:
            batch.append(chunk)
            if len(batch) >= staging.batch_size:
                staging.write(batch)
                batch = []
        if batch:
            staging.write(batch)
        count = staging.count()
        staging.publish()
    except BaseException:
        staging.discard()
        raise
    finally:
        staging.close()
    return count
