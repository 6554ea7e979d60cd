"""How memory files' bytes become text (``_workspace.decoding``): the rules every reader shares."""

from __future__ import annotations

import random

import pytest

from memory_router._workspace.decoding import decode


def test_utf_8_is_read_unchanged_but_for_a_byte_order_mark() -> None:
    text = "# Notes\n\nnaïve café 寿司\n"
    decoded = decode(("\ufeff" + text).encode())
    assert (decoded.text, decoded.encoding, decoded.warning) == (text, "utf-8", None)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (random.Random(1).randbytes(4096), "NUL bytes"),
        (b"\x89PNG\r\n\x1a\n" + bytes(range(1, 32)) * 40, "control characters"),
    ],
)
def test_binary_is_not_text(data: bytes, why: str) -> None:
    decoded = decode(data)
    assert decoded.binary
    assert decoded.text is None
    assert decoded.warning is not None
    assert why in decoded.warning
    assert decoded.warning.endswith("not indexed")


@pytest.mark.parametrize(
    "data",
    [
        b"# Notes\n\nThe boiler was serviced.\n" + bytes(512),  # a zero-filled tail
        b"\x00\x01\x02\x03" * 64,  # control bytes alone are valid UTF-8 too
    ],
)
def test_valid_utf_8_that_looks_binary_is_binary(data: bytes) -> None:
    data.decode("utf-8")  # valid UTF-8: the binary rule holds for it too
    decoded = decode(data)
    assert decoded.binary
    assert decoded.warning is not None
    assert decoded.warning.startswith("looks binary (")


def test_windows_1252_and_latin_1_are_read_with_a_fallback() -> None:
    cp1252 = decode("“Quoted” café — Renée\n".encode("cp1252"))
    assert (cp1252.text, cp1252.encoding) == ("“Quoted” café — Renée\n", "cp1252")
    assert cp1252.warning == "not valid UTF-8; read as Windows-1252 (cp1252)"
    latin = decode(b"caf\xe9 \x81\n")  # 0x81 is undefined in cp1252
    assert (latin.text, latin.encoding) == ("café \x81\n", "latin-1")


def test_mostly_utf_8_keeps_its_characters_and_replaces_the_bad_byte() -> None:
    decoded = decode("naïve café résumé ".encode() + b"\xff" + "déjà vu".encode())
    assert decoded.text == "naïve café résumé \ufffddéjà vu"
    assert decoded.warning == "not valid UTF-8: 1 bad byte(s) replaced with U+FFFD"


def test_utf_16_with_a_byte_order_mark() -> None:
    decoded = decode("# Notes\n\nçà\n".encode("utf-16"))
    assert (decoded.text, decoded.encoding) == ("# Notes\n\nçà\n", "utf-16")
