"""Memory files as text: UTF-8 first, a fallback for other text, binary files refused.

Memory files are meant to be UTF-8 Markdown, but a workspace holds what editors and tools
wrote: a note saved as Windows-1252 or Latin-1, a UTF-16 file from Notepad, an image or an
archive named ``.md``. :func:`decode` decides once, for every reader (discovery and
indexing, whatever the backend, and ``get``):

* a UTF-16 byte-order mark: read as UTF-16 (its NUL bytes are part of its characters);
* a NUL byte, or more than :data:`CONTROL_SHARE` of ASCII control characters (other than
  tab, newline, carriage return, form feed, backspace and escape): binary, not read —
  valid UTF-8 included (NUL and control bytes are valid UTF-8, and a file of them is no
  note, nor text any search could find);
* valid UTF-8 is read as UTF-8, unchanged but for a leading byte-order mark, which is
  not text (it would show in snippets and glue itself to the first word);
* mostly UTF-8 with a few bad bytes (at least as many valid multi-byte characters): UTF-8,
  the bad bytes replaced with U+FFFD;
* anything else is read as Windows-1252 (cp1252, which covers Latin-1's letters), or as
  Latin-1 when it holds a byte cp1252 leaves undefined.

Every outcome but plain UTF-8 carries a ``warning`` naming what was done, which ``index``,
``status`` and ``doctor`` print.
"""

from __future__ import annotations

from dataclasses import dataclass

CONTROL_SHARE = 0.05
"""The share of ASCII control bytes above which a file is binary (random bytes: ~11%)."""
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\b\x1b")
# Every byte but the counted controls, deleted by ``bytes.translate`` to count them at C speed.
_NOT_CONTROLS = bytes(b for b in range(256) if not (b < 0x20 or b == 0x7F) or b in _TEXT_CONTROLS)
_REPLACEMENT = "\ufffd"
_UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True, kw_only=True)
class Decoded:
    """A memory file's bytes as text. ``text`` is ``None`` when the file looks binary;
    ``encoding`` is what was used (``""`` for binary); ``warning`` says why the file is
    not plain UTF-8, for reports (``None`` when it is)."""

    text: str | None
    encoding: str
    warning: str | None = None

    @property
    def binary(self) -> bool:
        return self.text is None


def decode(data: bytes) -> Decoded:
    """``data`` as text, by the rules in the module docstring."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # never valid UTF-8
        try:
            text = data.decode("utf-16")
            return Decoded(text=text, encoding="utf-16", warning="UTF-16; read as UTF-16")
        except UnicodeDecodeError:
            pass
    why = _binary(data)
    if why:
        return Decoded(text=None, encoding="", warning=f"looks binary ({why}); not indexed")
    data = data.removeprefix(_UTF8_BOM)
    try:
        return Decoded(text=data.decode("utf-8"), encoding="utf-8")
    except UnicodeDecodeError:
        return _fallback(data)


def journal_text(data: bytes) -> str:
    """The entries journal's text: the router writes it as UTF-8; a bad byte is replaced."""
    return data.decode("utf-8", "replace")


def _binary(data: bytes) -> str | None:
    if b"\x00" in data:
        return "NUL bytes"
    controls = len(data.translate(None, _NOT_CONTROLS))
    if data and controls / len(data) > CONTROL_SHARE:
        return f"{controls / len(data):.0%} control characters"
    return None


def _fallback(data: bytes) -> Decoded:
    """Text that is not valid UTF-8: mostly UTF-8 with bad bytes, or a one-byte encoding."""
    text = data.decode("utf-8", "replace")
    bad = text.count(_REPLACEMENT) - data.count(_REPLACEMENT.encode("utf-8"))
    wide = sum(1 for char in text if ord(char) > 0x7F and char != _REPLACEMENT)
    if wide >= bad:  # valid multi-byte characters by chance are rare in other encodings
        return Decoded(
            text=text,
            encoding="utf-8",
            warning=f"not valid UTF-8: {bad} bad byte(s) replaced with U+FFFD",
        )
    try:
        text, encoding, name = data.decode("cp1252"), "cp1252", "Windows-1252 (cp1252)"
    except UnicodeDecodeError:
        text, encoding, name = data.decode("latin-1"), "latin-1", "Latin-1"
    return Decoded(text=text, encoding=encoding, warning=f"not valid UTF-8; read as {name}")
