"""The one request reader of the HTTP JSON API: every route's input is read and checked here.

A route declares its fields (:class:`Field`: the name on the wire, the keyword argument it
becomes, its type, whether it is required) and :func:`read_fields` or :func:`query_fields`
gives the checked keyword arguments, or raises :class:`ApiError` (400 or 413) with a hint.
So no value of the wrong type reaches the router, and nothing in a body can make the
server fail: bodies over ``[serve] max_body_bytes`` are refused while they arrive, JSON
nested deeper than :data:`MAX_DEPTH` is refused before it is parsed (the parser recurses),
and ``NaN``/``Infinity`` (not JSON) are refused as bad JSON.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from starlette.requests import Request

MAX_DEPTH = 32
"""The deepest JSON nesting accepted; ``/capture``'s messages need 5."""
MAX_INT = 2**31 - 1
"""The largest whole number accepted (a line number, a limit)."""
CATEGORIES = ("preference", "fact", "decision", "entity", "other")

Kind = Literal["string", "integer", "number", "boolean", "category", "messages"]
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_WHOLE = re.compile(r"[+-]?[0-9]{1,10}")
_BRACKETS = bytes(range(256)).translate(None, b"[]{}")  # every byte but the brackets


class ApiError(Exception):
    """An HTTP error answer: ``status``, a one-line ``message`` and maybe a ``hint``."""

    def __init__(self, status: int, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.hint = hint


@dataclass(frozen=True, slots=True)
class Field:
    """One input of a route: ``wire`` is its name in the request, ``name`` the keyword
    argument it becomes; ``kind`` its type (see :func:`checked`)."""

    wire: str
    name: str
    kind: Kind
    required: bool = False


def depth(data: bytes) -> int:
    """How deeply the arrays and objects of JSON ``data`` nest (strings skipped), without
    parsing it; counting stops past :data:`MAX_DEPTH`."""
    brackets = _STRING.sub(b"", data).translate(None, _BRACKETS)
    if len(brackets) <= MAX_DEPTH:  # too few to nest too deep: no need to walk them
        return len(brackets)
    deepest = level = 0
    for byte in brackets:
        level += 1 if byte in b"[{" else -1
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            break
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


async def read_body(request: Request, limit: int) -> dict[str, Any]:
    """The request's JSON object, at most ``limit`` bytes and :data:`MAX_DEPTH` deep."""
    declared = request.headers.get("content-length")
    too_big = ApiError(413, f"request body over {limit} bytes", "send a smaller body")
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_big
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_big
    data = bytes(body)
    if depth(data) > MAX_DEPTH:
        raise ApiError(400, f"JSON nested deeper than {MAX_DEPTH} levels", _hint_json())
    try:
        value = json.loads(data, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:  # ValueError: also invalid UTF-8
        raise ApiError(400, f"bad JSON: {error}", _hint_json()) from None
    if not isinstance(value, dict):
        raise ApiError(400, "the body must be a JSON object", _hint_json())
    return value


def _hint_json() -> str:
    return 'send one JSON object, e.g. {"query": "tea"} (docs/serve.md lists each route\'s fields)'


def read_fields(data: Mapping[str, Any], fields: Sequence[Field]) -> dict[str, Any]:
    """The keyword arguments ``fields`` make of a body; ``null`` counts as absent."""
    by_wire = {f.wire: f for f in fields}
    unknown = sorted(set(data) - set(by_wire))
    if unknown:
        raise ApiError(400, f"unknown field {unknown[0]!r}", f"known: {_listed(fields)}")
    values = {f.name: checked(f, data[f.wire]) for f in fields if data.get(f.wire) is not None}
    _require(fields, values)
    return values


def query_fields(request: Request, fields: Sequence[Field]) -> dict[str, Any]:
    """The keyword arguments ``fields`` make of the query string (whole numbers parsed);
    an empty value counts as absent, other parameters are ignored."""
    values: dict[str, Any] = {}
    for field in fields:
        raw = request.query_params.get(field.wire)
        if raw is None or raw == "":
            continue
        value = _parse_int(field, raw) if field.kind == "integer" else raw
        values[field.name] = checked(field, value)
    _require(fields, values)
    return values


def _parse_int(field: Field, raw: str) -> int:
    if _WHOLE.fullmatch(raw):
        return int(raw)
    raise ApiError(400, f"{field.wire} must be a whole number, got {raw[:40]!r}", _range(field))


def _require(fields: Sequence[Field], values: Mapping[str, Any]) -> None:
    for field in fields:
        if field.required and field.name not in values:
            raise ApiError(400, f"{field.wire} is required", f"fields: {_listed(fields)}")


def _listed(fields: Sequence[Field]) -> str:
    return ", ".join(f"{f.wire} ({f.kind}{', required' if f.required else ''})" for f in fields)


def checked(field: Field, value: Any) -> Any:
    """``value`` when it is of ``field``'s kind, else :class:`ApiError` 400.

    ``string``: a string; ``integer``: a whole number within ±:data:`MAX_INT` (not a
    boolean); ``number``: a finite number; ``boolean``: ``true`` or ``false``;
    ``category``: one of :data:`CATEGORIES`; ``messages``: an array of strings or
    ``{role, content}`` objects.
    """
    ok = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: type(v) is int and -MAX_INT <= v <= MAX_INT,
        "number": lambda v: type(v) in (int, float) and math.isfinite(v),
        "boolean": lambda v: isinstance(v, bool),
        "category": lambda v: isinstance(v, str) and v in CATEGORIES,
        "messages": lambda v: isinstance(v, list) and all(isinstance(m, str | dict) for m in v),
    }[field.kind](value)
    if not ok:
        shown = json.dumps(value)[:60] if not isinstance(value, list | dict) else type_name(value)
        raise ApiError(400, f"{field.wire} must be {_kind(field)}, got {shown}", _range(field))
    return value


def type_name(value: Any) -> str:
    return "an array" if isinstance(value, list) else "an object"


def _kind(field: Field) -> str:
    return {
        "string": "a string",
        "integer": "a whole number",
        "number": "a finite number",
        "boolean": "true or false",
        "category": f"one of {', '.join(CATEGORIES)}",
        "messages": 'an array of strings or {"role", "content"} objects',
    }[field.kind]


def _range(field: Field) -> str | None:
    if field.kind == "integer":
        return f"{field.wire} is a whole number between -{MAX_INT} and {MAX_INT}"
    return None
