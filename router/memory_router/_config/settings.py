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
            where = _Where(path, table, key, sub=f"{table}.{key}" if table else key)
            values[field.name] = _coerce(hints[field.name], data[key], where)
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


@dataclasses.dataclass(frozen=True, slots=True)
class _Where:
    """Where a value being coerced sits, for its error: file, table, key; ``sub`` is the
    dotted table a nested table (or ``{ env = … }`` secret) of the key is read as."""

    path: str
    table: str
    key: str
    sub: str

    def fail(self, expected: str, value: Any) -> ConfigError:
        return ConfigError(
            f"expected {expected}, got {type(value).__name__} {value!r}",
            path=self.path,
            table=self.table or None,
            key=self.key,
        )


def _coerce(hint: Any, value: Any, where: _Where) -> Any:
    """``value`` as type ``hint`` (checked, never converted across kinds: ``"1"`` is not
    an integer), or a :class:`ConfigError` naming file, table and key."""
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return _coerce_union(hint, value, where)
    if origin is Literal:
        if value in typing.get_args(hint):
            return value
        raise where.fail("one of " + _type_name(hint), value)
    if hint is Secret:
        return _coerce_secret(value, where)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, Mapping):
            raise where.fail("a table", value)
        return parse_settings(hint, value, path=where.path, table=where.sub)
    if origin is tuple:
        return _coerce_tuple(typing.get_args(hint)[0], value, where)
    if origin in (dict, Mapping, typing.Mapping):
        return _coerce_mapping(typing.get_args(hint)[1], value, where)
    return _coerce_scalar(hint, value, where)


def _coerce_union(hint: Any, value: Any, where: _Where) -> Any:
    """``X | None`` is ``X`` (TOML has no null); otherwise the first option that fits."""
    options = [a for a in typing.get_args(hint) if a is not type(None)]
    if len(options) == 1:
        return _coerce(options[0], value, where)
    for option in options:
        try:
            return _coerce(option, value, where)
        except ConfigError:
            continue
    raise where.fail(_type_name(hint), value)


def _coerce_secret(value: Any, where: _Where) -> Secret:
    """A plain string, or a ``{ env = … }`` / ``{ file = … }`` table with exactly one key."""
    if isinstance(value, str):
        return Secret(value=value)
    if not isinstance(value, Mapping):
        raise where.fail(_type_name(Secret), value)
    secret = parse_settings(Secret, value, path=where.path, table=where.sub)
    if not (secret.env or secret.file) or (secret.env and secret.file):
        raise ConfigError("give exactly one of env or file", path=where.path, table=where.sub)
    return secret


def _coerce_tuple(item: Any, value: Any, where: _Where) -> tuple[Any, ...]:
    if not isinstance(value, list | tuple):
        raise where.fail(f"an array of {_type_name(item)}", value)
    return tuple(_coerce(item, v, where) for v in value)


def _coerce_mapping(item: Any, value: Any, where: _Where) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise where.fail("a table", value)
    return {
        str(k): _coerce(item, v, dataclasses.replace(where, key=f"{where.key}.{k}"))
        for k, v in value.items()
    }


def _coerce_scalar(hint: Any, value: Any, where: _Where) -> Any:
    """bool, int, float (an integer is a float; not a bool, never NaN or infinite), str."""
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise where.fail("true or false", value)
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise where.fail("an integer", value)
    if hint is float:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise where.fail("a number", value)
        if not math.isfinite(value):
            raise where.fail("a finite number", value)
        return float(value)
    if hint is str:
        if isinstance(value, str):
            return value
        raise where.fail("a string", value)
    if hint is Any:
        return value
    raise where.fail(_type_name(hint), value)
