"""Redaction: the one stage that masks secrets before text reaches any index.

Every text written to the entries journal (``store``, ``remember``, ``capture``, over the
CLI, HTTP and MCP alike: :func:`redact_report`, which also names what it masked) and
session transcripts, message by message (:func:`redact_messages`, which carries a private
key block that a message leaves open into the next messages), pass through it;
:func:`redact` masks one text. Three layers, applied in turn:

1. **Private key blocks** (PEM, OpenSSH, PGP): from the BEGIN line to the END line, or to
   the end of the message when the END line is missing, or — in the next message — up to
   an END line that closes a block begun earlier. A lone END line takes the key material
   before it.
2. **Known shapes** (:data:`PATTERNS`): OpenClaw's default set (reference §3.3) plus the
   token formats of detect-secrets' plugins and other well-known issuers, passwords in
   URLs and query strings, JSON and YAML secret fields, ``Authorization`` headers.
3. **Entropy**: a random-looking word (letters and digits or symbols) within a few words
   after *key*, *secret*, *token*, *password*, …; and any long random-looking word with
   upper case, lower case and digits anywhere. Hex digests (git SHAs), UUIDs and ordinary
   words stay readable.

:data:`REDACTION_VERSION` changes whenever what is masked changes; it is part of the
index fingerprint, so an index built by an older redaction is rebuilt.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "PATTERNS",
    "REDACTION_VERSION",
    "Redaction",
    "mask_secret",
    "redact",
    "redact_messages",
    "redact_report",
]

REDACTION_VERSION = 2
"""1: OpenClaw's default patterns. 2: this module (key blocks across messages, issuers'
token formats, URL and JSON secrets, entropy)."""

_MASK_MIN_LENGTH = 32
_BLOCK_MASK = "…redacted…"

_KEY_BLOCK = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
_BEGIN = re.compile(rf"-----BEGIN {_KEY_BLOCK}-----", re.IGNORECASE)
_END = re.compile(rf"-----END {_KEY_BLOCK}-----", re.IGNORECASE)
# Key material: base64 lines, and the "Proc-Type:"-style headers of encrypted keys.
_KEY_MATERIAL = re.compile(r"[A-Za-z0-9+/=\\]{16,}")
_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\\ \t\n")

_PREFIXED = (  # (kind, shape): the kind is what an answer names when it masks one
    ("openai_or_anthropic_key", r"sk-[A-Za-z0-9_-]{8,}"),  # also DeepSeek…
    ("github_token", r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{20,}"),
    ("github_pat", r"github_pat_[A-Za-z0-9_]{20,}"),
    ("gitlab_token", r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas|sa|c)-[A-Za-z0-9_-]{20,}"),
    ("gitlab_runner_token", r"GR1348941[A-Za-z0-9_-]{20,}"),
    ("stripe_key", r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}"),
    ("stripe_webhook_secret", r"whsec_[A-Za-z0-9]{20,}"),
    ("huggingface_token", r"hf_[A-Za-z0-9]{20,}"),
    ("huggingface_org_token", r"api_org_[A-Za-z0-9]{20,}"),
    ("sendgrid_key", r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    (
        "aws_access_key",
        r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}",
    ),
    ("slack_token", r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("slack_app_token", r"xapp-[A-Za-z0-9-]{10,}"),
    ("groq_key", r"gsk_[A-Za-z0-9_-]{10,}"),
    ("google_api_key", r"AIza[0-9A-Za-z_-]{20,}"),
    ("google_oauth_secret", r"GOCSPX-[A-Za-z0-9_-]{20,}"),
    ("google_oauth_token", r"ya29\.[A-Za-z0-9_-]{20,}"),
    ("perplexity_key", r"pplx-[A-Za-z0-9_-]{10,}"),
    ("npm_token", r"npm_[A-Za-z0-9]{10,}"),
    ("pypi_token", r"pypi-AgE[A-Za-z0-9_-]{50,}"),
    ("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ("discord_bot_token", r"[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}"),
    ("twilio_key", r"(?:AC|SK)[a-f0-9]{32}"),
    ("mailchimp_key", r"[0-9a-f]{32}-us[0-9]{1,2}"),
    ("square_oauth_secret", r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}"),
    ("square_access_token", r"EAAA[A-Za-z0-9_-]{60,}"),
    ("artifactory_key", r"AKC[a-zA-Z0-9]{10,}"),
    ("digitalocean_token", r"do[por]_v1_[a-f0-9]{64}"),
    ("shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("databricks_token", r"dapi[a-h0-9]{32}"),
    ("linear_key", r"lin_api_[A-Za-z0-9]{40}"),
    ("postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("atlassian_token", r"ATATT3[A-Za-z0-9_=-]{50,}"),
    ("supabase_token", r"sbp_[a-f0-9]{40}"),
    ("doppler_token", r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}"),
    ("vault_token", r"hv[sb]\.[A-Za-z0-9_-]{24,}"),
    ("tailscale_key", r"tskey-[a-z]+-[A-Za-z0-9-]{20,}"),
    ("age_secret_key", r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    ("mailgun_key", r"key-[0-9a-f]{32}"),
)

# A value: double-quoted, single-quoted (spaces allowed) or one bare word up to a ";".
_VALUE = r"""(?:"([^"\n]+)"|'([^'\n]+)'|([^\s"'\\;]+))"""

PATTERNS: tuple[re.Pattern[str], ...] = (
    # Passwords in URLs (scheme://user:password@host) and secrets in query strings.
    re.compile(
        r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,30}://[^\s:/@\"'<>]{0,64}:([^\s@/\"'<>]{1,256})@",
        re.IGNORECASE,
    ),
    re.compile(
        r"[?&;](?:access_token|refresh_token|id_token|token|api_?key|key|secret|client_secret"
        r"|password|passwd|pwd|pass|sig|signature|auth|code)=([^&\s#\"'<>]+)",
        re.IGNORECASE,
    ),
    # Slack webhooks carry their secret in the path.
    re.compile(r"hooks\.slack\.com/services/(T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+)"),
    # Well-known token formats, anywhere; each a named group, so a match names its kind.
    re.compile(
        r"(?<![A-Za-z0-9])(?:"
        + "|".join(f"(?P<{kind}>{shape})" for kind, shape in _PREFIXED)
        + r")(?![A-Za-z0-9])"
    ),
    # Telegram bot tokens (also inside /bot<token>/ URLs).
    re.compile(r"\bbot(\d{6,}:[A-Za-z0-9_-]{20,})\b"),
    re.compile(r"\b(\d{6,}:[A-Za-z0-9_-]{20,})\b"),
    # JSON fields and quoted assignments whose name ends in a secret word.
    re.compile(
        r"""["']?(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{0,64}(?:key|token|secret|password|passwd|pwd|passphrase|credentials?"""
        r"""|auth)["']\s*[:=]\s*["']((?:[^"'\\]|\\.)+)["']""",
        re.IGNORECASE,
    ),
    # env-style assignments (NAME=value, NAME: value), OpenClaw's, plus PWD/PASSPHRASE.
    re.compile(
        r"""(?<![A-Z0-9_.-])[A-Z0-9_.-]{0,64}(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|PASSPHRASE)\b\s*[=:]\s*"""
        + _VALUE,
        re.IGNORECASE,
    ),
    # CLI flags: --token x, --api-key=x, --client-secret 'x'.
    re.compile(
        r"--[a-z0-9-]{0,64}(?:api[-_]?key|token|secret|password|passwd)(?:=|\s+)" + _VALUE,
        re.IGNORECASE,
    ),
    # Authorization headers of every scheme, and bare bearer tokens.
    re.compile(
        r"Authorization\s*[:=]\s*(?:Bearer|Basic|Token|Bot|Digest)\s+([A-Za-z0-9._~+/=-]+)",
        re.IGNORECASE,
    ),
    re.compile(r"\bBearer\s+([A-Za-z0-9._~+/=-]{18,})", re.IGNORECASE),
)
"""The known shapes, applied in turn; the secret is the last non-empty group (or all)."""
_KINDS = (
    "url_password",
    "url_secret",
    "slack_webhook",
    "api_token",  # the token formats: each match names its own kind (a named group)
    "telegram_bot_token",
    "telegram_bot_token",
    "secret_field",
    "secret_assignment",
    "secret_flag",
    "authorization_header",
    "bearer_token",
)
"""The kind of secret each of :data:`PATTERNS` masks, as :class:`Redaction` names it."""

_SECRET_WORD = re.compile(
    r"(?:key|secret|token|passw(?:or)?d|passphrase|pwd|credentials?)", re.IGNORECASE
)
_PASSWORD_WORD = re.compile(r"passw(?:or)?d|passphrase|pwd", re.IGNORECASE)
_WORD = re.compile(r"[^\s\"'`,;()<>\[\]{}]+")
_WINDOW_WORDS = 4
_LETTER = re.compile(r"[^\W\d_]")
_DIGIT_OR_SYMBOL = re.compile(r"[\d]|[^\w.-]")
_LONG_WORD = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/=_-]{32,}(?![A-Za-z0-9+/=_-])")
_LONG_ENTROPY = 4.0


def mask_secret(secret: str) -> str:
    """``***`` for a secret shorter than 32 characters, else its first 6 and last 4
    characters around an ellipsis (enough to recognise it, not to use it)."""
    if len(secret) < _MASK_MIN_LENGTH:
        return "***"
    return f"{secret[:6]}…{secret[-4:]}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Redaction:
    """A text with its secrets masked, and the kinds of secret masked (each once, in the
    order found; ``()`` when nothing was): ``aws_access_key``, ``private_key``,
    ``secret_assignment``, ``random_token``…"""

    text: str
    kinds: tuple[str, ...] = ()


def redact(text: str) -> str:
    """``text`` with every secret masked (see the module docstring)."""
    return _Redactor().message(text)


def redact_report(text: str) -> Redaction:
    """:func:`redact`, saying what it masked (for answers that must tell the caller)."""
    redactor = _Redactor()
    masked = redactor.message(text)
    return Redaction(text=masked, kinds=tuple(dict.fromkeys(redactor.kinds)))


def redact_messages(texts: Iterable[str]) -> list[str]:
    """The messages of one conversation, redacted in order.

    A private key block left open by one message (no END line) keeps masking the key
    material of the following messages, up to its END line.
    """
    redactor = _Redactor()
    return [redactor.message(text) for text in texts]


class _Redactor:
    """Redacts consecutive messages; remembers a key block left open."""

    def __init__(self) -> None:
        self.open_block = False
        self.kinds: list[str] = []

    def message(self, text: str) -> str:
        text = self._blocks(text)
        for pattern, kind in zip(PATTERNS, _KINDS, strict=True):
            text = pattern.sub(functools.partial(self._masked, kind=kind), text)
        near = _mask_near_secret_words(text)
        if near != text:
            self.kinds.append("secret_near_keyword")
        masked = _LONG_WORD.sub(_mask_if_random, near)
        if masked != near:
            self.kinds.append("random_token")
        return masked

    def _masked(self, match: re.Match[str], kind: str) -> str:
        out = _mask_match(match)
        if out != match.group(0):
            self.kinds.append(match.lastgroup or kind)
        return out

    def _blocks(self, text: str) -> str:
        out: list[str] = []
        pos = 0
        if self.open_block:
            pos = self._continue_block(text, out)
        while (begin := _BEGIN.search(text, pos)) is not None:
            self.kinds.append("private_key")
            out.append(_before_end(text[pos : begin.start()]))
            end = _END.search(text, begin.end())
            body = text[begin.end() : end.start() if end else len(text)]
            sep = "\n" if "\n" in body else " "
            out.append(f"{begin.group()}{sep}{_BLOCK_MASK}")
            if end is None:
                self.open_block = True
                return "".join(out)
            out.append(f"{sep}{end.group()}")
            pos = end.end()
        out.append(_before_end(text[pos:]))
        return "".join(out)

    def _continue_block(self, text: str, out: list[str]) -> int:
        """Mask the rest of a block begun in an earlier message; where to go on from."""
        end = _END.search(text)
        first = _KEY_MATERIAL.search(text)
        if end is not None and not _BEGIN.search(text, 0, end.start()):
            out.append(f"{_BLOCK_MASK} {end.group()}")
            self.open_block = False
            return end.end()
        if end is None and first is not None and not text[: first.start()].strip():
            out.append(_BLOCK_MASK)  # still key material: the block goes on
            return len(text)
        self.open_block = False
        return 0


def _before_end(text: str) -> str:
    """``text`` with the key material before a lone END line masked."""
    out: list[str] = []
    pos = 0
    for end in _END.finditer(text):
        start = end.start()
        while start > pos and text[start - 1] in _B64_CHARS:
            start -= 1
        material = text[start : end.start()]
        if _KEY_MATERIAL.search(material):
            lead = len(material) - len(material.lstrip())
            out += [text[pos : start + lead], f"{_BLOCK_MASK} "]
        else:
            out.append(text[pos : end.start()])
        out.append(end.group())
        pos = end.end()
    return "".join(out) + text[pos:]


def _mask_match(match: re.Match[str]) -> str:
    whole = match.group(0)
    groups = [i for i in range(1, (match.re.groups or 0) + 1) if match.group(i)]
    if not groups:
        return mask_secret(whole)
    start, end = (i - match.start() for i in match.span(groups[-1]))
    if _already_masked(whole[start:end]):
        return whole
    return whole[:start] + mask_secret(whole[start:end]) + whole[end:]


def _already_masked(word: str) -> bool:
    return "…" in word or word.strip("*") == ""


def _mask_near_secret_words(text: str) -> str:
    """Mask random-looking words among the few words after a secret word."""
    words = list(_WORD.finditer(text))
    checked: set[tuple[int, bool]] = set()
    spans = []
    for i, word in enumerate(words):
        if _SECRET_WORD.search(word.group()) is None:
            continue
        password = _PASSWORD_WORD.search(word.group()) is not None
        for j in range(i + 1, min(i + 1 + _WINDOW_WORDS, len(words))):
            if (j, password) in checked:
                continue
            checked.add((j, password))
            raw = words[j].group()
            token = raw.lstrip("=:").rstrip(".!?:")
            if _looks_secret(token, password=password):
                start = words[j].start() + len(raw) - len(raw.lstrip("=:"))
                spans.append((start, start + len(token)))
    return _replace_spans(text, spans)


def _looks_secret(token: str, *, password: bool) -> bool:
    if len(token) < (6 if password else 8) or _already_masked(token):
        return False
    if token[0] in "~./" or "://" in token or "@" in token[1:]:
        return False  # a path, a URL or an address
    return (
        _LETTER.search(token) is not None
        and _DIGIT_OR_SYMBOL.search(token) is not None
        and _entropy(token) >= 2.5
    )


def _mask_if_random(match: re.Match[str]) -> str:
    word = match.group()
    kinds = (any(c.isupper() for c in word), any(c.islower() for c in word))
    if all(kinds) and any(c.isdigit() for c in word) and _entropy(word) >= _LONG_ENTROPY:
        return mask_secret(word)
    return word


def _entropy(word: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(word)
    return -sum(n / len(word) * math.log2(n / len(word)) for n in counts.values())


def _replace_spans(text: str, spans: list[tuple[int, int]]) -> str:
    out: list[str] = []
    pos = 0
    for start, end in sorted(set(spans)):
        if start < pos:
            continue
        out += [text[pos:start], mask_secret(text[start:end])]
        pos = end
    return "".join(out) + text[pos:]
