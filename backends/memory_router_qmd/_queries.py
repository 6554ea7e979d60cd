"""Turning a user's query into QMD sub-queries its parser accepts.

QMD ANDs every word of a ``lex`` query, so a verbatim question matches almost nothing
(session recall@10 0.18 on LoCoMo). Keyword mode sends one ``lex`` sub-query per
keyword, extracted exactly as the built-in keyword-only mode does
(:func:`memory_router.kit.query_keywords`), and QMD fuses them (0.91). QMD's parser rejects
an unbalanced ``"`` and reads a leading ``-`` as negation, so both are removed; MCP takes
at most 10 sub-queries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memory_router.kit import query_keywords

MAX_SEARCHES = 10
_SPACE = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def clean_term(term: str) -> str:
    """A term QMD's lex and vec parsers accept: no quotes, no leading dashes, one line."""
    term = _SPACE.sub(" ", _CONTROL.sub(" ", term.replace('"', " "))).strip()
    return " ".join(word.lstrip("-") for word in term.split(" ") if word.lstrip("-"))


def lex_terms(query: str) -> list[str]:
    """Up to 10 keyword sub-queries; the raw tokens when no keyword is extracted."""
    terms = _unique(clean_term(k) for k in query_keywords(query))
    if not terms:
        terms = _unique(clean_term(t) for t in query.split())
    return terms[:MAX_SEARCHES]


def vec_text(query: str) -> str:
    """The query as one ``vec`` line (no newlines, no ``-negation``)."""
    return clean_term(query)


def searches(mode: str, query: str) -> list[dict[str, str]]:
    """MCP ``searches`` for ``search`` (lex only), ``vsearch`` (vec) or ``query`` (both)."""
    lex = [{"type": "lex", "query": t} for t in lex_terms(query)]
    vec = [{"type": "vec", "query": vec_text(query)}] if vec_text(query) else []
    if mode == "search":
        return lex
    if mode == "vsearch":
        return vec
    return [*lex[: MAX_SEARCHES - len(vec)], *vec]


def typed_document(items: list[dict[str, str]]) -> str:
    """The same sub-queries as a CLI ``query`` document (``lex: …`` lines)."""
    return "\n".join(f"{item['type']}: {item['query']}" for item in items)


def _unique(terms: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for term in terms:
        if term and term.lower() not in seen:
            seen[term.lower()] = None
    return list(seen)
