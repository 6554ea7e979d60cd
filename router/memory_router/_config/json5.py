"""A small tolerant JSON5 reader, enough for ``openclaw.json``.

It accepts what people write in that file: ``//`` and ``/* */`` comments, trailing
commas, unquoted keys, single-quoted strings, ``+`` signs, hexadecimal numbers,
``Infinity``/``NaN`` and leading or trailing decimal points. Everything else is JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_NUMBER = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|Infinity|NaN|\d*\.?\d+(?:[eE][+-]?\d+)?\.?)")
_ESCAPES = {"'": "'", '"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n"}
_ESCAPES |= {"r": "\r", "t": "\t", "v": "\v", "0": "\0", "\n": ""}


class Json5Error(ValueError):
    """Text that is not JSON5; the message names the line and column."""


def loads(text: str) -> Any:
    """Parse JSON5 ``text`` into Python values (objects become dicts)."""
    reader = _Reader(text)
    value = reader.value()
    reader.space()
    if reader.at < len(text):
        reader.fail("unexpected text after the value")
    return value


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def fail(self, message: str) -> None:
        line = self.text.count("\n", 0, self.at) + 1
        column = self.at - (self.text.rfind("\n", 0, self.at) + 1) + 1
        raise Json5Error(f"{message} at line {line}, column {column}")

    def space(self) -> None:
        text = self.text
        while self.at < len(text):
            if text[self.at].isspace() or text[self.at] == "\ufeff":
                self.at += 1
            elif text.startswith("//", self.at):
                end = text.find("\n", self.at)
                self.at = len(text) if end < 0 else end + 1
            elif text.startswith("/*", self.at):
                end = text.find("*/", self.at + 2)
                if end < 0:
                    self.fail("unterminated comment")
                self.at = end + 2
            else:
                return

    def value(self) -> Any:
        self.space()
        if self.at >= len(self.text):
            self.fail("unexpected end of text")
        char = self.text[self.at]
        if char == "{":
            return self.obj()
        if char == "[":
            return self.array()
        if char in "\"'":
            return self.string()
        for word, value in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.at):
                self.at += len(word)
                return value
        return self.number()

    def obj(self) -> dict[str, Any]:
        self.at += 1
        result: dict[str, Any] = {}
        while True:
            self.space()
            if self.text.startswith("}", self.at):
                self.at += 1
                return result
            key = self.key()
            self.space()
            if not self.text.startswith(":", self.at):
                self.fail("expected ':'")
            self.at += 1
            result[key] = self.value()
            if not self.separator("}"):
                return result

    def array(self) -> list[Any]:
        self.at += 1
        result: list[Any] = []
        while True:
            self.space()
            if self.text.startswith("]", self.at):
                self.at += 1
                return result
            result.append(self.value())
            if not self.separator("]"):
                return result

    def separator(self, close: str) -> bool:
        """After an item: ``True`` when more may follow, ``False`` when ``close`` ended it."""
        self.space()
        if self.text.startswith(",", self.at):
            self.at += 1
            return True
        if self.text.startswith(close, self.at):
            self.at += 1
            return False
        self.fail(f"expected ',' or '{close}'")
        return False

    def key(self) -> str:
        if self.at < len(self.text) and self.text[self.at] in "\"'":
            return self.string()
        match = _IDENT.match(self.text, self.at)
        if match is None:
            self.fail("expected a key")
        assert match is not None
        self.at = match.end()
        return match.group()

    def string(self) -> str:
        quote = self.text[self.at]
        self.at += 1
        parts: list[str] = []
        while self.at < len(self.text):
            char = self.text[self.at]
            if char == quote:
                self.at += 1
                return "".join(parts)
            if char == "\\":
                parts.append(self.escape())
                continue
            if char == "\n":
                self.fail("line break in a string")
            parts.append(char)
            self.at += 1
        self.fail("unterminated string")
        return ""

    def escape(self) -> str:
        code = self.text[self.at + 1 : self.at + 2]
        if code == "u":
            digits = self.text[self.at + 2 : self.at + 6]
            self.at += 6
            try:
                return chr(int(digits, 16))
            except ValueError:
                self.fail("bad \\u escape")
        if code == "x":
            digits = self.text[self.at + 2 : self.at + 4]
            self.at += 4
            return chr(int(digits, 16))
        self.at += 2
        return _ESCAPES.get(code, code)

    def number(self) -> int | float:
        match = _NUMBER.match(self.text, self.at)
        if match is None or not match.group():
            self.fail("unexpected character")
        assert match is not None
        self.at = match.end()
        raw = match.group()
        body = raw.lstrip("+-")
        sign = -1 if raw.startswith("-") else 1
        if body.lower().startswith("0x"):
            return sign * int(body, 16)
        if body in ("Infinity", "NaN"):
            return sign * float(body.lower().replace("infinity", "inf"))
        value = json.loads(("0" + body if body.startswith(".") else body).rstrip(".") or "0")
        return sign * value if isinstance(value, int | float) else 0
