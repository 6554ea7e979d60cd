"""A loopback stand-in for the model APIs OpenClaw calls while the fixtures are made.

Used by scripts/make-openclaw-fixtures.sh only; nothing leaves the machine.

* ``POST /v1/embeddings`` (OpenAI shape) answers with real all-MiniLM-L6-v2 vectors,
  computed by memory-router's offline ``minilm`` provider, so the index OpenClaw builds
  holds vectors of a real model that memory-router can also compute.
* ``POST /v1/chat/completions`` (streamed or not) answers every turn with a fixed reply,
  so ``openclaw agent --local`` writes a real session transcript without a model.

Usage: python scripts/openclaw-fixture-server.py PORT_FILE
The chosen port is written to PORT_FILE once the server listens; SIGTERM stops it.
"""

from __future__ import annotations

import json
import signal
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from memory_router import Router

REPLY = "Noted: the staging database volume is now 200 GB, and Priya books the Lisbon venue."


def embedder() -> Any:
    """memory-router's offline MiniLM embedder (no cache: every text is computed)."""
    state = Path(tempfile.mkdtemp(prefix="openclaw-fixture-"))
    config = state / "memory-router.toml"
    config.write_text(
        f'workspace = "{state}"\nstate_dir = "{state}"\n'
        '[embedding]\nprovider = "minilm"\n[cache]\nenabled = false\n',
        encoding="utf-8",
    )
    router = Router.from_config(config)
    assert router.embedder is not None
    return router.embedder


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model: Any = None

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write("fixture-server: " + format % args + "\n")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path.endswith("/embeddings"):
            self._json(self._embeddings(body))
        elif self.path.endswith("/chat/completions"):
            self._chat(body)
        else:
            self._json({"error": {"message": f"no route {self.path}"}}, status=404)

    def do_GET(self) -> None:
        if self.path.endswith("/models"):
            self._json({"object": "list", "data": [{"id": "echo", "object": "model"}]})
        else:
            self._json({"error": {"message": f"no route {self.path}"}}, status=404)

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = self.model.embed_documents(texts)
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
            for i, v in enumerate(vectors)
        ]
        return {"object": "list", "data": data, "model": body.get("model", "")}

    def _chat(self, body: dict[str, Any]) -> None:
        created = int(time.time())
        base = {"id": "chatcmpl-fixture", "created": created, "model": body.get("model", "echo")}
        if not body.get("stream"):
            message = {"role": "assistant", "content": REPLY}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            usage = {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}
            self._json({**base, "object": "chat.completion", "choices": [choice], "usage": usage})
            return
        events = [
            {"index": 0, "delta": {"role": "assistant", "content": REPLY}, "finish_reason": None},
            {"index": 0, "delta": {}, "finish_reason": "stop"},
        ]
        chunks = [{**base, "object": "chat.completion.chunk", "choices": [e]} for e in events]
        payload = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
        payload += b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _json(self, value: Any, status: int = 200) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    Handler.model = embedder()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    Path(sys.argv[1]).write_text(str(server.server_address[1]), encoding="utf-8")
    server.serve_forever()


if __name__ == "__main__":
    main()
