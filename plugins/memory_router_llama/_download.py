"""Resolving ``local.model_path``: a file on disk, or an ``hf:user/repo/file.gguf`` download.

``hf:`` URIs (and plain ``http(s)://`` URLs) are fetched once into ``local.model_cache_dir``
over httpx from ``$MEMORY_ROUTER_HF_ENDPOINT``, ``$HF_ENDPOINT`` or ``https://huggingface.co``.
The download streams into ``<name>.part`` and resumes it with an HTTP Range request after a
dropped connection (up to :data:`ATTEMPTS` times in one call, and again on the next call);
the finished file is renamed into place atomically. Every network step has the
``local.download_timeout_s`` connect/read timeout, so an offline machine fails fast with a
clear :class:`EmbeddingError` instead of hanging.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx

from memory_router import EmbeddingError

DEFAULT_ENDPOINT = "https://huggingface.co"
ATTEMPTS = 3


def is_remote(model_path: str) -> bool:
    return model_path.startswith(("hf:", "http://", "https://"))


def endpoint() -> str:
    """The Hugging Face base URL (overridable for mirrors and tests)."""
    return (
        os.environ.get("MEMORY_ROUTER_HF_ENDPOINT")
        or os.environ.get("HF_ENDPOINT")
        or DEFAULT_ENDPOINT
    ).rstrip("/")


def source_url(model_path: str) -> tuple[str, Path]:
    """``(url, relative cache path)`` for an ``hf:`` URI or an http(s) URL."""
    if model_path.startswith("hf:"):
        parts = model_path[3:].strip("/").split("/")
        if len(parts) < 3 or not parts[-1]:
            raise EmbeddingError(
                f"bad model URI {model_path!r}: expected hf:<user>/<repo>/<file>.gguf",
                provider="local",
            )
        user, repo, file = parts[0], parts[1], "/".join(parts[2:])
        return f"{endpoint()}/{user}/{repo}/resolve/main/{file}", Path(user, repo, *file.split("/"))
    name = model_path.rstrip("/").rsplit("/", 1)[-1] or "model.gguf"
    return model_path, Path("url", name)


def cached_path(model_path: str, cache_dir: Path) -> Path:
    """Where a remote model is (or will be) kept in ``cache_dir``."""
    return cache_dir / source_url(model_path)[1]


def resolve_model(model_path: str, cache_dir: Path, *, timeout: float) -> Path:
    """A local file for ``model_path``, downloading it into ``cache_dir`` when needed."""
    if not is_remote(model_path):
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise EmbeddingError(
                f"local model file not found: {path}",
                provider="local",
                hint="set [embedding.local] model_path to a .gguf file or an hf: URI",
            )
        return path
    url, _ = source_url(model_path)
    target = cached_path(model_path, cache_dir)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    download(url, target, timeout=timeout)
    return target


def download(url: str, target: Path, *, timeout: float) -> None:
    """Fetch ``url`` into ``target`` via ``target.part``, resuming after dropped connections."""
    part = target.with_name(target.name + ".part")
    last_error = ""
    with httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=True) as client:
        for _ in range(ATTEMPTS):
            before = part.stat().st_size if part.exists() else 0
            try:
                if _fetch(client, url, part, window=timeout):
                    os.replace(part, target)
                    return
            except (httpx.TimeoutException, httpx.TransportError, _Stalled) as error:
                last_error = f"{type(error).__name__}: {error}"
            except httpx.HTTPError as error:  # redirect loops and the like: final
                last_error = f"{type(error).__name__}: {error}"
                break
            except OSError as error:
                raise EmbeddingError(
                    f"cannot write {part}: {error.strerror or error}", provider="local"
                ) from None
            after = part.stat().st_size if part.exists() else 0
            if after <= before:  # no progress: retrying at once will not help
                break
    raise EmbeddingError(
        f"cannot download {url} ({last_error or 'incomplete'}); kept {part.name} to resume",
        provider="local",
        transient=True,
        hint=f"check the network, or download it yourself to {target}",
    )


class _Stalled(Exception):
    """Fewer than :data:`MIN_BYTES` arrived within one timeout window."""


MIN_BYTES = 64 * 1024


def _fetch(client: httpx.Client, url: str, part: Path, *, window: float) -> bool:
    """One request; True when ``part`` is complete. HTTP errors raise EmbeddingError.

    Per-read timeouts alone never end a server that trickles a byte at a time, so a
    window of ``window`` seconds that brings fewer than :data:`MIN_BYTES` ends the try
    (what arrived is kept for the next one).
    """
    offset = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    with client.stream("GET", url, headers=headers) as response:
        if response.status_code == 416 and offset:  # the part file already holds everything
            return True
        if response.status_code not in (200, 206):
            raise EmbeddingError(
                f"cannot download {url}: HTTP {response.status_code}", provider="local"
            )
        mode = "ab" if response.status_code == 206 else "wb"  # 200: server ignored the Range
        expected = _expected_size(response, offset)
        with part.open(mode) as handle:
            started, received = time.monotonic(), 0
            for chunk in response.iter_bytes():  # unbuffered: a drop keeps what arrived
                handle.write(chunk)
                received += len(chunk)
                if time.monotonic() - started >= window:
                    if received < MIN_BYTES:
                        raise _Stalled(f"{received} bytes in {window:g} s")
                    started, received = time.monotonic(), 0
    size = part.stat().st_size
    return expected is None or size >= expected


def _expected_size(response: httpx.Response, offset: int) -> int | None:
    total = response.headers.get("Content-Range", "").rpartition("/")[2]
    if total.isdigit():
        return int(total)
    length = response.headers.get("Content-Length")
    if length and length.isdigit():
        return int(length) + (offset if response.status_code == 206 else 0)
    return None
