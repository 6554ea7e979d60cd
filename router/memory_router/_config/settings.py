"""Turning TOML tables into frozen dataclasses, with errors that name file, table and key.

Plugins use :func:`parse_settings` for their own tables (``[backends.<name>]``), so every
table of the configuration is validated the same way: unknown keys, wrong types and
numbers out of range (below 0 or above :data:`MAX_NUMBER`, unless a field's
``metadata["range"]`` says otherwise) are errors, never ignored.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from .._exceptions import ConfigError

T = TypeVar("T")

MAX_NUMBER = 1e9
"""The largest number a setting takes unless its field's ``metadata["range"]`` says
otherwise (a billion seconds, bytes or entries is beyond any real use)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Secret:
    """A secret given by indirection: ``{ env = "NAME" }`` or ``{ file = "/path" }``.

    A plain string is accepted too (``value``), but discouraged. :meth:`resolve` reads it
    when needed; ``repr`` never shows the value.
    """

    env: str | None = None
    file: str | None = None
    value: str | None = dataclasses.field(default=None, repr=False)

    def resolve(self) -> str | None:
        """The secret, or ``None`` when the variable is unset or empty."""
        if self.value:
            return self.value
        if self.env:
            return os.environ.get(self.env) or None
        if self.file:
            try:
                return Path(self.file).expanduser().read_text(encoding="utf-8").strip() or None
            except OSError:
                return None
        return None

    def describe(self) -> str:
        """Where the secret comes from, safe to print."""
        if self.env:
            return f"env {self.env}"
        if self.file:
            return f"file {self.file}"
        return "inline value" if self.value else "unset"


def unset_secrets(settings: Any, prefix: str = "") -> list[tuple[str, Secret]]:
    """``(dotted key, secret)`` for each ``{ env = … }`` / ``{ file = … }`` secret of
    ``settings`` (nested tables and tables of secrets too) that resolves to nothing."""
    found: list[tuple[str, Secret]] = []

    def visit(key: str, value: Any) -> None:
        if isinstance(value, Secret):
            if (value.env or value.file) and value.resolve() is None:
                found.append((key, value))
        elif isinstance(value, Mapping):
            for name, item in value.items():
                visit(f"{key}.{name}", item)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            found.extend(unset_secrets(value, f"{key}."))

    if dataclasses.is_dataclass(settings) and not isinstance(settings, type):
        for field in dataclasses.fields(settings):
            if not field.metadata.get("internal"):
                visit(prefix + toml_name(field), getattr(settings, field.name))
    return found


def unset_secret_error(settings: Any, *, path: str, table: str) -> ConfigError | None:
    """A :class:`ConfigError` naming the first secret of ``settings`` that resolves to
    nothing (an unset variable, an unreadable file), or ``None`` when all are there.

    An unset variable is never quietly taken as "no key": an object store would then try
    its default credential chain and fail far from the cause.
    """
    missing = unset_secrets(settings)
    if not missing:
        return None
    key, secret = missing[0]
    where = f"{key} of [{table}]"
    if secret.env:
        return ConfigError(
            f"{secret.env} is not set ({where})",
            path=path,
            hint=f"set {secret.env} in the environment that starts memory-router (an MCP"
            " host passes only the variables its server entry lists under env), or give"
            f' {key.rsplit(".", 1)[-1]} as {{ file = "/path" }}',
        )
    return ConfigError(
        f"{secret.file} cannot be read or is empty ({where})",
        path=path,
        hint=f"write the secret into {secret.file}, or fix the path in the config",
    )


def toml_name(field: dataclasses.Field[Any]) -> str:
    """The TOML key of a field: ``metadata["toml"]``, else the name without a trailing ``_``."""
    return str(field.metadata.get("toml", field.name.rstrip("_")))


def parse_settings(cls: type[T], data: Mapping[str, Any] | None, *, path: str, table: str) -> T:
    """Build dataclass ``cls`` from a TOML table, rejecting unknown keys and wrong types.

    ``path`` and ``table`` only feed error messages (``table`` is dotted, ``""`` for the
    top level). Nested dataclass fields read nested tables.
    """
    data = dict(data or {})
    hints = typing.get_type_hints(cls)
    fields = {
        toml_name(f): f
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if not f.metadata.get("internal")
    }
    unknown = sorted(set(data) - set(fields))
    if unknown:
        known = ", ".join(sorted(fields))
        raise ConfigError(
            f"unknown key (known keys: {known})", path=path, table=table or None, key=unknown[0]
        )
    values: dict[str, Any] = {}
    for key, field in fields.items():
        if key in data:
            sub = f"{table}.{key}" if table else key
            values[field.name] = _coerce(
                hints[field.name], data[key], path=path, table=table, key=key, sub=sub
            )
            _check_range(field, values[field.name], path=path, table=table, key=key)
    try:
        return cls(**values)
    except (TypeError, ValueError, OverflowError) as error:
        raise ConfigError(str(error), path=path, table=table or None) from None


def _check_range(
    field: dataclasses.Field[Any], value: Any, *, path: str, table: str, key: str
) -> None:
    """Numbers must lie in ``field.metadata["range"]``, by default ``[0, MAX_NUMBER]``:
    no setting means anything below zero, and a huge one (``timeout_s = 1e300``) only
    overflows later, far from the file that set it."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    low, high = field.metadata.get("range", (0, MAX_NUMBER))
    if not low <= value <= high:
        raise ConfigError(
            f"expected a number from {low:.10g} to {high:.10g}, got {value!r}",
            path=path,
            table=table or None,
            key=key,
        )


def settings_to_dict(settings: Any) -> dict[str, Any]:
    """The TOML-shaped dict that :func:`parse_settings` would turn back into ``settings``."""
    result: dict[str, Any] = {}
    for field in dataclasses.fields(settings):
        if field.metadata.get("internal"):
            continue
        value = getattr(settings, field.name)
        if isinstance(value, Secret):
            value = (
                {"env": value.env}
                if value.env
                else {"file": value.file}
                if value.file
                else value.value
            )
        elif dataclasses.is_dataclass(value):
            value = settings_to_dict(value)
        elif isinstance(value, tuple):
            value = list(value)
        if value is not None:
            result[toml_name(field)] = value
    return result


def _type_name(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(hint))
    if origin in (types.UnionType, typing.Union):
        return " | ".join(_type_name(a) for a in typing.get_args(hint) if a is not type(None))
    if dataclasses.is_dataclass(hint):
        return "table" if hint is not Secret else 'string or { env = "NAME" }'
    return getattr(hint, "__name__", str(hint))


def _coerce(hint: Any, value: Any, *, path: str, table: str, key: str, sub: str) -> Any:
    def fail(expected: str) -> ConfigError:
        return ConfigError(
            f"expected {expected}, got {type(value).__name__} {value!r}",
            path=path,
            table=table or None,
            key=key,
        )

    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _coerce(options[0], value, path=path, table=table, key=key, sub=sub)
        for option in args:
            if option is type(None):
                continue
            try:
                return _coerce(option, value, path=path, table=table, key=key, sub=sub)
            except ConfigError:
                continue
        raise fail(_type_name(hint))
    if origin is Literal:
        if value in args:
            return value
        raise fail("one of " + _type_name(hint))
    if hint is Secret:
        if isinstance(value, str):
            return Secret(value=value)
        if isinstance(value, Mapping):
            secret = parse_settings(Secret, value, path=path, table=sub)
            if not (secret.env or secret.file) or (secret.env and secret.file):
                raise ConfigError("give exactly one of env or file", path=path, table=sub)
            return secret
        raise fail(_type_name(hint))
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, Mapping):
            raise fail("a table")
        return parse_settings(hint, value, path=path, table=sub)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise fail(f"an array of {_type_name(args[0])}")
        return tuple(_coerce(args[0], v, path=path, table=table, key=key, sub=sub) for v in value)
    if origin in (dict, Mapping, typing.Mapping):
        if not isinstance(value, Mapping):
            raise fail("a table")
        return {
            str(k): _coerce(args[1], v, path=path, table=table, key=f"{key}.{k}", sub=sub)
            for k, v in value.items()
        }
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise fail("true or false")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise fail("an integer")
    if hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            if math.isfinite(value):
                return float(value)
            raise fail("a finite number")
        raise fail("a number")
    if hint is str:
        if isinstance(value, str):
            return value
        raise fail("a string")
    if hint is Any:
        return value
    raise fail(_type_name(hint))
