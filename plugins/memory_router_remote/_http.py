"""The HTTP plumbing shared by the remote providers: one client, retries, error translation.

Retries (tenacity) follow OpenClaw: only failures that look like rate limits or server
trouble — HTTP 429, any 5xx, or a body saying "rate limit", "too many requests",
"resource has been exhausted", "cloudflare" or "tokens per day" — are retried, up to
``remote.max_retries`` times, waiting 0.5 s, 1 s, 2 s… (capped at 8 s) plus 0–20 % jitter.
Timeouts and refused connections are not retried (a retry would double the wait), but are
marked transient so the caller may try again later. Every failure leaves as
:class:`EmbeddingError`; no httpx exception escapes.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memory_router import EmbeddingError
from memory_router.kit import EmbeddingProvider, ProviderContext

if TYPE_CHECKING:  # imported when a provider is built: plugin discovery stays light
    import tenacity

RETRYABLE = re.compile(
    r"rate[_ ]limit|too many requests|\b429\b|resource has been exhausted|cloudflare"
    r"|tokens per day",
    re.IGNORECASE,
)
SECRET_HEADERS = frozenset({"authorization", "x-goog-api-key"})
BASE_DELAY_S = 0.5
MAX_DELAY_S = 8.0


def backoff(state: tenacity.RetryCallState) -> float:
    """0.5 s doubling per attempt plus 0–20 % jitter, never more than 8 s."""
    import random  # not at import: every CLI start loads this plugin

    delay = BASE_DELAY_S * 2 ** (state.attempt_number - 1) * (1 + random.uniform(0, 0.2))
    return float(min(MAX_DELAY_S, delay))


class RetryableError(EmbeddingError):
    """A failure worth retrying now (rate limit, 5xx); always ``transient``."""


class HttpProvider(EmbeddingProvider):
    """An embedding provider that speaks JSON over HTTP to ``base_url``.

    Subclasses set ``id``, ``model``, ``base_url`` and implement the request shapes.
    ``headers`` are sent with every request (they include the credentials).
    """

    def __init__(
        self, context: ProviderContext, *, model: str, base_url: str, headers: Mapping[str, str]
    ) -> None:
        remote = context.config.embedding.remote
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.extra_headers = dict(remote.headers)
        self.concurrency = max(1, min(remote.concurrency, 8))
        self.max_batch_tokens = max(1, remote.max_batch_tokens)
        self.query_timeout = remote.query_timeout_s
        self.batch_timeout = remote.batch_timeout_s
        self.max_retries = max(0, remote.max_retries)
        self._dims: int | None = None
        for name, value in {**self.extra_headers, **headers}.items():
            if not _header_safe(value):
                # Never echo the value: it is usually a key.
                raise EmbeddingError(
                    f"{self.id}: header {name!r} contains characters that cannot be sent over"
                    " HTTP (a trailing newline, or a copied smart quote?)",
                    provider=self.id,
                )
        self._display_url = _without_userinfo(self.base_url)
        import httpx

        self._client = httpx.Client(
            headers={"Content-Type": "application/json", **self.extra_headers, **headers},
            follow_redirects=False,  # the configured host only, as OpenClaw's SSRF guard
            limits=httpx.Limits(max_connections=self.concurrency + 1),
        )

    @property
    def dims(self) -> int | None:
        return self._dims

    def public_headers(self) -> dict[str, str]:
        """Configured headers without credentials, sorted by name (for the cache key)."""
        return {
            k: v for k, v in sorted(self.extra_headers.items()) if k.lower() not in SECRET_HEADERS
        }

    def post(self, path: str, body: Mapping[str, Any], *, timeout: float) -> Any:
        """POST JSON and return the decoded answer, retrying rate limits and 5xx."""
        import tenacity

        retrying = tenacity.Retrying(
            # Retries share the call's budget: a query never waits (retries + 1) × timeout.
            stop=tenacity.stop_after_attempt(self.max_retries + 1)
            | tenacity.stop_after_delay(timeout),
            wait=backoff,
            retry=tenacity.retry_if_exception_type(RetryableError),
            reraise=True,
        )
        return retrying(self._post_once, path, body, timeout)

    def _post_once(self, path: str, body: Mapping[str, Any], timeout: float) -> Any:
        import httpx

        url = self.base_url + path
        shown = self._display_url + path
        try:
            response = self._client.post(
                url, json=body, timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0))
            )
        except httpx.TimeoutException:
            raise self.error(
                f"no answer from {shown} within {timeout:g} s", transient=True
            ) from None
        except httpx.HTTPError as error:
            # The exception text may quote request headers (the key): name its type only.
            reason = type(error).__name__
            raise self.error(
                f"cannot reach {shown}: {reason}",
                transient=True,
                hint=f"check that the server at {self._display_url} is running and reachable, "
                "or fix [embedding.remote] base_url",
            ) from None
        if response.status_code >= 300:
            text = response.text[:500]
            message = f"{self.id} embeddings failed: {response.status_code} {text}".strip()
            retry = response.status_code == 429 or response.status_code >= 500
            raise self.error(message, transient=retry, retry=retry or bool(RETRYABLE.search(text)))
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise self.error(
                f"{self.id} answered with malformed JSON: {response.text[:200]!r}"
            ) from None

    def error(
        self,
        message: str,
        *,
        transient: bool = False,
        retry: bool = False,
        hint: str | None = None,
    ) -> EmbeddingError:
        kind = RetryableError if retry else EmbeddingError
        return kind(message, provider=self.id, transient=transient or retry, hint=hint)

    def check(self, vectors: Any, expected: int) -> list[list[float]]:
        """Validate ``vectors`` as ``expected`` lists of numbers of one length."""
        if not isinstance(vectors, list) or len(vectors) != expected:
            count = len(vectors) if isinstance(vectors, list) else "no"
            raise self.error(f"{self.id} returned {count} vectors for {expected} texts")
        try:
            rows = [[float(x) for x in v] for v in vectors]
        except (TypeError, ValueError):
            raise self.error(f"{self.id} returned a vector that is not a list of numbers") from None
        sizes = {len(r) for r in rows}
        if len(sizes) > 1 or 0 in sizes:
            raise self.error(f"{self.id} returned vectors of sizes {sorted(sizes)}")
        if rows:
            self._dims = len(rows[0])
        return rows

    def close(self) -> None:
        self._client.close()


def _header_safe(value: str) -> bool:
    return all(" " <= char <= "~" for char in value)


def _without_userinfo(url: str) -> str:
    """``url`` with any ``user:password@`` removed, for messages."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def resolve_key(context: ProviderContext, provider: str, env_names: tuple[str, ...]) -> str:
    """The API key: ``[embedding.remote] api_key``, else the first set env var, else an error."""
    secret = context.config.embedding.remote.api_key
    if secret is not None:
        value = (secret.resolve() or "").strip()
        if value:
            return value
        raise EmbeddingError(
            f"no API key found for provider {provider}: [embedding.remote] api_key"
            f" ({secret.describe()}) is empty",
            provider=provider,
            hint="set what api_key names, or fix api_key in the config",
        )
    for name in env_names:
        if os.environ.get(name, "").strip():
            return os.environ[name].strip()
    raise EmbeddingError(
        f"no API key found for provider {provider}: set {' or '.join(env_names)}"
        " or [embedding.remote] api_key",
        provider=provider,
        hint=f"export {env_names[0]}=<your key> (or set [embedding.remote] api_key ="
        ' { env = "NAME" }), or choose another [embedding] provider',
    )


def dig(data: Any, *keys: str | int) -> Any:
    """``data[k1][k2]…`` or ``None`` when the shape differs (for tolerant parsing)."""
    for key in keys:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return None
    return data
