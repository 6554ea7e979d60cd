"""A corpus of fake secrets (one per kind) and near-misses, for redaction tests and benches.

Every :class:`SecretCase` is a short conversation (one or more user messages) holding one
secret; after redaction, ``secret`` must not be found anywhere. Every near-miss is a
message that must come out of redaction unchanged (git SHAs, UUIDs, digests, paths…).
The secrets are random strings in each issuer's format, made from a fixed seed, so the
corpus is the same on every run and holds no real credential.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

__all__ = ["NEAR_MISSES", "SECRET_CASES", "SecretCase"]

_ALNUM = string.ascii_letters + string.digits
_B64 = _ALNUM + "+/"
_HEX = "0123456789abcdef"
_UPPER = string.ascii_uppercase + string.digits


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretCase:
    """``messages`` of one conversation hold ``secret``, which redaction must remove."""

    kind: str
    messages: tuple[str, ...]
    secret: str


class _Random:
    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def __call__(self, alphabet: str, n: int) -> str:
        return "".join(self._random.choice(alphabet) for _ in range(n))


def _pem_body(r: _Random, lines: int) -> list[str]:
    return [r(_B64, 64) for _ in range(lines)]


class _Corpus:
    """The cases being written, with the one random stream they draw from (in order:
    the same seed gives the same corpus)."""

    def __init__(self, seed: int) -> None:
        self.r = _Random(seed)
        self.cases: list[SecretCase] = []

    def add(self, kind: str, secret: str, *messages: str) -> None:
        self.cases.append(SecretCase(kind=kind, messages=messages, secret=secret))

    def token(self, kind: str, value: str, template: str = "here is the value {}, use it") -> None:
        self.add(kind, value, template.format(value))


def _cases() -> tuple[SecretCase, ...]:
    corpus = _Corpus(20261123)
    for group in (_api_keys, _private_keys, _credentials, _service_tokens, _in_prose):
        group(corpus)
    return tuple(corpus.cases)


def _api_keys(c: _Corpus) -> None:
    """Keys of AI and cloud APIs, GitHub tokens, an Authorization header."""
    r = c.r
    c.token("openai", "sk-proj-" + r(_ALNUM, 48))
    c.token("anthropic", "sk-ant-api03-" + r(_ALNUM + "-_", 80))
    for prefix in ("ghp", "gho", "ghs", "ghu", "ghr"):
        c.token(f"github {prefix}_", f"{prefix}_" + r(_ALNUM, 36), "git clone with {} please")
    c.token("github_pat_", "github_pat_" + r(_ALNUM, 22) + "_" + r(_ALNUM, 59))
    c.token("aws access key id", "AKIA" + r(_UPPER, 16), "the access key id is {} in us-east-1")
    aws_secret = r(_B64, 40)
    c.add("aws secret in prose", aws_secret, f"and the AWS secret access key is {aws_secret} ok")
    c.token("bearer header", r(_ALNUM + "._-", 40), "curl -H 'Authorization: Bearer {}' …")


def _private_keys(c: _Corpus) -> None:
    """PEM and PGP private key blocks, one split over two messages."""
    r = c.r
    body = _pem_body(r, 4)
    pem = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *body, "-----END RSA PRIVATE KEY-----"])
    c.add("pem rsa", body[1], f"my key:\n{pem}\nthanks")
    body = _pem_body(r, 4)
    ssh = "\n".join(
        ["-----BEGIN OPENSSH PRIVATE KEY-----", *body, "-----END OPENSSH PRIVATE KEY-----"]
    )
    c.add("pem openssh", body[2], ssh)
    body = _pem_body(r, 4)
    c.add("pem without END", body[3], "\n".join(["-----BEGIN PRIVATE KEY-----", *body]))
    body = _pem_body(r, 6)
    c.add(
        "pem split over two messages",
        body[4],
        "\n".join(["-----BEGIN EC PRIVATE KEY-----", *body[:3]]),
        "\n".join([*body[3:], "-----END EC PRIVATE KEY-----"]),
    )
    body = _pem_body(r, 4)
    pgp = "\n".join(["-----BEGIN PGP PRIVATE KEY BLOCK-----", "", *body])
    c.add("pgp private key", body[0], pgp + "\n-----END PGP PRIVATE KEY BLOCK-----")


def _credentials(c: _Corpus) -> None:
    """Passwords in assignments and URLs, keys in JSON and flags."""
    r = c.r
    c.token("password=", r(_ALNUM + "!#%", 20), "set DB_PASSWORD={} in .env")
    password = r(_ALNUM, 18)
    c.add("postgres url", password, f"psql postgres://app:{password}@db.internal:5432/app")
    password = r(_ALNUM, 16)
    c.add("https url", password, f"pip install from https://deploy:{password}@pkgs.example.com/x")
    password = r(_ALNUM, 24)
    c.add("redis url", password, f"REDIS_URL is redis://:{password}@cache:6379/0")
    password = r(_ALNUM, 20)
    c.add("mongodb+srv url", password, f"mongodb+srv://admin:{password}@cluster0.mongodb.net/db")
    c.token("json apiKey", r(_ALNUM, 32), '{{"apiKey": "{}", "region": "eu"}}')
    c.token(
        "json client_secret", r(_ALNUM + "-_", 35), '{{"client_id": "web", "client_secret":"{}"}}'
    )
    c.token("--token flag", r(_ALNUM, 30), "run deploy --token {} --force")


def _service_tokens(c: _Corpus) -> None:
    """Tokens in each issuer's format (Slack, Stripe, JWT, Vault…)."""
    r = c.r
    c.token(
        "slack", "xoxb-" + r(string.digits, 12) + "-" + r(string.digits, 12) + "-" + r(_ALNUM, 24)
    )
    c.token(
        "slack webhook",
        "T" + r(_UPPER, 8) + "/B" + r(_UPPER, 8) + "/" + r(_ALNUM, 24),
        "post to https://hooks.slack.com/services/{}",
    )
    c.token("google api key", "AIza" + r(_ALNUM + "-_", 35))
    c.token(
        "telegram bot",
        r(string.digits, 10) + ":" + r(_ALNUM + "-_", 35),
        "https://api.telegram.org/bot{}/getMe",
    )
    c.token("stripe", "sk_live_" + r(_ALNUM, 24))
    c.token("hugging face", "hf_" + r(_ALNUM, 34))
    c.token("gitlab", "glpat-" + r(_ALNUM + "-_", 20))
    c.token("sendgrid", "SG." + r(_ALNUM + "-_", 22) + "." + r(_ALNUM + "-_", 43))
    c.token("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJ" + r(_ALNUM, 40) + "." + r(_ALNUM + "-_", 43))
    c.token("npm", "npm_" + r(_ALNUM, 36))
    c.token("pypi", "pypi-AgEIcHlwaS5vcmc" + r(_ALNUM + "-_", 80))
    c.token("discord bot", "M" + r(_ALNUM, 23) + "." + r(_ALNUM, 6) + "." + r(_ALNUM + "-_", 27))
    c.token("twilio", "SK" + r(_HEX, 32))
    c.token("mailchimp", r(_HEX, 32) + "-us14")
    c.token("square", "sq0csp-" + r(_ALNUM + "-_", 43))
    c.token(
        "azure storage key",
        r(_B64, 86) + "==",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=x",
    )
    c.token("basic auth header", r(_B64, 28), "Authorization: Basic {}")
    c.token(
        "access_token in a query",
        r(_ALNUM, 40),
        "GET https://api.example.com/v1/me?access_token={}&x=1",
    )
    c.token("google oauth secret", "GOCSPX-" + r(_ALNUM + "-_", 28))
    c.token("digitalocean", "dop_v1_" + r(_HEX, 64))
    c.token("vault", "hvs." + r(_ALNUM, 90))


def _in_prose(c: _Corpus) -> None:
    """Secrets said in plain words, with no format to recognise."""
    r = c.r
    c.token("password in prose", r(_ALNUM, 10) + "!7", "my password is {} for the router")
    c.token("token in prose", r(_ALNUM, 32), "the deploy token for staging: {} (rotate monthly)")
    c.token("random key alone", r(_ALNUM, 48), "keep this safe: {}")


SECRET_CASES: tuple[SecretCase, ...] = _cases()
"""One conversation per kind of secret."""

NEAR_MISSES: tuple[str, ...] = (
    "fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b (short: 3f78685)",
    "session 123e4567-e89b-12d3-a456-426614174000 started at 2026-11-23T11:19:22Z",
    "image sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "checksum 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 matches",
    "see https://docs.example.com/guide/install?page=2&lang=en#setup",
    "clone git@github.com:example/memory-router.git or ssh://git@example.com/repo.git",
    "the server listens on http://127.0.0.1:8080/api/v1/search",
    "edit router/memory_router/_sessions.py and ~/.config/memory-router/config.toml",
    "the key to good memory is small chunks; rotate the API key every 90 days",
    "a token budget of 4000 tokens; MAX_TOKENS stays 4000",
    "password reset emails are sent; the password is required",
    "call getAccessTokenFromCache() before refreshSecretKeyIfNeeded()",
    "version 3.11.7, ip 10.0.0.12, mail ops@example.com, phone +1 555 0100",
    "request id 01HZX3J8Y6K2V9Q4T7W5N0M1PB took 12ms",
    "Bearer tooshort and sk-short are not secrets",
    "GitHub tokens start with ghp_ and AWS key ids with AKIA",
    "AbstractSingletonProxyFactoryBeanConfigurationManager is a long name",
    "the tokenizer is trigram and keyword_mode = or",
)
"""Messages that hold no secret and must stay readable."""
