"""The ``local`` provider: a GGUF made from MiniLM by the tests, and model downloads."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_router import Config, EmbeddingError
from memory_router.kit import ProviderContext
from memory_router_llama import LlamaProvider, create, resolve_model, truncate
from memory_router_minilm import MiniLMProvider, model_dir

SENTENCES = [
    "The client prefers blue over green.",
    "Deploys run every Tuesday; rollbacks need two approvals.",
    "résumé, naïve café — unicode and punctuation!",
    " ".join(["a long note that goes past two hundred and fifty six word pieces"] * 30),
]


def context(config: Config) -> ProviderContext:
    return ProviderContext(config=config, state_dir=config.agent_state_path)


def local_config(
    write: Callable[[str], Config], provider: str, model_path: str, **keys: Any
) -> Config:
    extra = "".join(f"{k} = {v}\n" for k, v in keys.items())
    return write(
        f'[embedding]\nprovider = "{provider}"\n[embedding.local]\n'
        f'model_path = "{model_path}"\n{extra}'
    )


def test_truncate_keeps_the_trailing_special_token() -> None:
    assert truncate([101, 1, 2, 3, 102], 4, [102]) == [101, 1, 2, 102]
    assert truncate([101, 1, 2, 102], 4, [102]) == [101, 1, 2, 102]
    assert truncate([2, 5, 6, 7], 3, []) == [2, 5, 6]
    assert truncate([2, 5, 6, 7], 3, [1]) == [2, 5, 6]  # no EOS present: plain cut


@pytest.mark.slow
@pytest.mark.llama
def test_gguf_agrees_with_numpy_minilm(
    minilm_gguf: Path, provider_config: Callable[[str], Config]
) -> None:
    config = local_config(provider_config, "local", str(minilm_gguf), context_size=256, threads=2)
    provider = create(context(config), "")
    reference = MiniLMProvider(model_dir())
    try:
        got = np.array(provider.embed_documents(SENTENCES))
        query = np.array(provider.embed_query(SENTENCES[0]))
        want = np.array(reference.embed_documents(SENTENCES))
    finally:
        provider.close()
        reference.close()
    cosines = (got * want).sum(axis=1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    assert cosines.min() >= 0.999, cosines
    assert float(query @ want[0]) >= 0.999
    assert provider.dims == 384
    assert provider.max_input_tokens == 256


@pytest.mark.llama
def test_one_context_is_never_used_in_parallel(
    minilm_gguf: Path, provider_config: Callable[[str], Config]
) -> None:
    config = local_config(provider_config, "local", str(minilm_gguf), context_size=128)
    provider = create(context(config), "")
    results: list[list[list[float]]] = []
    try:
        threads = [
            threading.Thread(target=lambda: results.append(provider.embed_documents(SENTENCES[:2])))
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        provider.close()
    assert provider.concurrency == 1
    assert len(results) == 4
    assert all(np.allclose(r, results[0], atol=1e-5) for r in results)


def test_auto_mode_only_takes_an_existing_local_file(
    provider_config: Callable[[str], Config], tmp_path: Path
) -> None:
    with pytest.raises(EmbeddingError, match="not a local file"):
        create(context(provider_config('[embedding]\nprovider = "auto"\n')), "")
    with pytest.raises(EmbeddingError, match="not a local file"):
        create(context(local_config(provider_config, "auto", str(tmp_path / "missing.gguf"))), "")


@pytest.mark.llama  # the provider imports llama_cpp before it looks for the file
def test_explicit_missing_file_fails_on_first_use(
    provider_config: Callable[[str], Config], tmp_path: Path
) -> None:
    config = local_config(provider_config, "local", str(tmp_path / "missing.gguf"))
    provider = create(context(config), "")
    with pytest.raises(EmbeddingError, match=r"local model file not found: .*missing\.gguf"):
        provider.embed_query("x")


def test_missing_llama_cpp_names_the_extra(tmp_path: Path) -> None:
    # A real interpreter where importing llama_cpp fails, as on a machine without the extra.
    script = f"""
import sys
sys.modules["llama_cpp"] = None
from pathlib import Path
from memory_router import EmbeddingError, ProviderContext, load_config
from memory_router_llama import create
Path("{tmp_path}/c.toml").write_text('[embedding]\\nprovider = "local"\\n')
config = load_config("{tmp_path}/c.toml", environ={{}})
try:
    create(ProviderContext(config=config, state_dir=Path("{tmp_path}")), "")
except EmbeddingError as error:
    print(error.message, "|", error.hint)
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert "llama-cpp-python" in out.stdout
    assert "memory-router[local]" in out.stdout


# -- downloads ---------------------------------------------------------------------------


class FileServer:
    """Serves ``payload`` at any path with Range support; can drop the first response halfway."""

    def __init__(
        self, payload: bytes, *, drop_first: bool = False, hang: bool = False, trickle: bool = False
    ) -> None:
        self.payload = payload
        self.drop_first = drop_first
        self.hang = hang
        self.trickle = trickle
        self.ranges: list[str | None] = []
        self.paths: list[str] = []


@pytest.fixture
def file_server() -> Iterator[Callable[..., tuple[FileServer, str]]]:
    servers: list[ThreadingHTTPServer] = []
    stop = threading.Event()

    def start(payload: bytes, **flags: bool) -> tuple[FileServer, str]:
        state = FileServer(payload, **flags)

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                state.paths.append(self.path)
                state.ranges.append(self.headers.get("Range"))
                if state.hang:
                    stop.wait(10)
                    return
                start = int((self.headers.get("Range") or "bytes=0-")[6:].split("-")[0])
                body = state.payload[start:]
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(body)))
                if start:
                    self.send_header(
                        "Content-Range",
                        f"bytes {start}-{len(state.payload) - 1}/{len(state.payload)}",
                    )
                self.end_headers()
                if state.trickle:  # one byte every 50 ms: no read ever times out
                    for byte in body:
                        if stop.is_set():
                            return
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(0.05)
                    return
                if state.drop_first and len(state.ranges) == 1:
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)  # drop the connection mid-body
                    return
                self.wfile.write(body)

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        servers.append(httpd)
        return state, f"http://127.0.0.1:{httpd.server_address[1]}"

    yield start
    stop.set()
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def test_hf_uri_downloads_into_the_cache(
    file_server: Callable[..., tuple[FileServer, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    payload = os.urandom(300_000)
    server, url = file_server(payload)
    monkeypatch.setenv("MEMORY_ROUTER_HF_ENDPOINT", url)
    path = resolve_model("hf:org/repo/sub/model.gguf", tmp_path / "models", timeout=5)
    assert path == tmp_path / "models" / "org" / "repo" / "sub" / "model.gguf"
    assert path.read_bytes() == payload
    assert server.paths == ["/org/repo/resolve/main/sub/model.gguf"]
    resolve_model("hf:org/repo/sub/model.gguf", tmp_path / "models", timeout=5)
    assert len(server.paths) == 1  # cached: no second download


def test_dropped_download_resumes_with_a_range_request(
    file_server: Callable[..., tuple[FileServer, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    payload = os.urandom(2_000_000)
    server, url = file_server(payload, drop_first=True)
    monkeypatch.setenv("HF_ENDPOINT", url)
    path = resolve_model("hf:a/b/m.gguf", tmp_path, timeout=5)
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(payload).digest()
    assert server.ranges[0] is None
    assert len(server.ranges) == 2
    assert server.ranges[1] is not None
    resumed_at = int(server.ranges[1][6:-1])
    assert 0 < resumed_at < len(payload)
    assert not list(tmp_path.rglob("*.part"))


def test_offline_download_fails_fast_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("MEMORY_ROUTER_HF_ENDPOINT", f"http://127.0.0.1:{port}")
    started = time.perf_counter()
    with pytest.raises(
        EmbeddingError, match=r"cannot download http://127\.0\.0\.1:\d+/a/b/resolve/main/m\.gguf"
    ):
        resolve_model("hf:a/b/m.gguf", tmp_path, timeout=5)
    assert time.perf_counter() - started < 5


def test_a_silent_server_times_out(
    file_server: Callable[..., tuple[FileServer, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, url = file_server(b"x", hang=True)
    monkeypatch.setenv("MEMORY_ROUTER_HF_ENDPOINT", url)
    started = time.perf_counter()
    with pytest.raises(EmbeddingError, match="ReadTimeout"):
        resolve_model("hf:a/b/m.gguf", tmp_path, timeout=0.3)
    assert time.perf_counter() - started < 5


def test_a_trickling_server_is_given_up_on(
    file_server: Callable[..., tuple[FileServer, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, url = file_server(b"x" * 4096, trickle=True)
    monkeypatch.setenv("MEMORY_ROUTER_HF_ENDPOINT", url)
    started = time.perf_counter()
    with pytest.raises(EmbeddingError, match="_Stalled"):
        resolve_model("hf:a/b/m.gguf", tmp_path, timeout=0.3)
    assert time.perf_counter() - started < 5
    assert (tmp_path / "hf_a_m.gguf.part").exists() or list(tmp_path.rglob("*.part"))


def test_bad_hf_uri_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match=r"expected hf:<user>/<repo>/<file>\.gguf"):
        resolve_model("hf:only-two/parts", tmp_path, timeout=1)


@pytest.mark.llama
def test_hf_model_is_downloaded_then_embeds(
    minilm_gguf: Path,
    file_server: Callable[..., tuple[FileServer, str]],
    provider_config: Callable[[str], Config],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, url = file_server(minilm_gguf.read_bytes())
    monkeypatch.setenv("MEMORY_ROUTER_HF_ENDPOINT", url)
    config = local_config(
        provider_config, "local", "hf:test/minilm/minilm-f32.gguf", context_size=256
    )
    provider = create(context(config), "")
    assert isinstance(provider, LlamaProvider)
    try:
        vector = provider.embed_query("hello world")
    finally:
        provider.close()
    assert len(vector) == 384
    assert server.paths == ["/test/minilm/resolve/main/minilm-f32.gguf"]
    assert provider.cache_key_data() == {
        "provider": "local",
        "model": "hf:test/minilm/minilm-f32.gguf",
    }
