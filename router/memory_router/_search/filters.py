"""Search filters: which sources, and which category of entries, a search may return.

A backend receives them in :class:`SearchRequest` (``sources``, ``category``) and applies
them before ranking where it can (the LanceDB backend as ``where`` prefilters, the SQLite
backend's ``sources`` in SQL); the router then drops whatever does not match, so a
backend that ignores a filter still answers correctly, only with fewer candidates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import get_args

from .._exceptions import InvalidInput
from .._types import BackendResult, Category, Hit, SearchRequest, Source

SOURCES: tuple[str, ...] = get_args(Source)
CATEGORIES: tuple[str, ...] = get_args(Category)


def check_sources(value: Iterable[str] | None) -> tuple[Source, ...] | None:
    """``None`` (every source) or a non-empty tuple of known sources."""
    if value is None:
        return None
    if isinstance(value, str):
        value = (value,)
    found = tuple(dict.fromkeys(value))
    unknown = [s for s in found if s not in SOURCES]
    if unknown or not found:
        raise InvalidInput(
            f"unknown source {unknown[0]!r}" if unknown else "sources must not be empty",
            key="sources",
            hint=f"use one or more of: {', '.join(SOURCES)}",
        )
    return found  # type: ignore[return-value]


def check_category(value: str | None) -> Category | None:
    if value is None or value in CATEGORIES:
        return value  # type: ignore[return-value]
    raise InvalidInput(
        f"unknown category {value!r}",
        key="category",
        hint=f"use one of: {', '.join(CATEGORIES)}",
    )


def matches(hit: Hit, request: SearchRequest) -> bool:
    if request.sources is not None and hit.source not in request.sources:
        return False
    if request.category is not None:
        return hit.entry is not None and hit.entry.category == request.category
    return True


def keep(result: BackendResult, request: SearchRequest) -> BackendResult:
    """``result`` without the hits ``request``'s filters exclude."""
    if request.sources is None and request.category is None:
        return result
    hits = tuple(h for h in result.hits if matches(h, request))
    return result if len(hits) == len(result.hits) else dataclasses.replace(result, hits=hits)
