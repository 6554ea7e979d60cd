"""Answers as agents see them: OpenClaw's tool shapes, and JSON that is always valid UTF-8."""

from __future__ import annotations

import json
from typing import Any

from memory_router import Entry, MemoryRouterError, SearchResponse


def clean(value: Any) -> Any:
    """``value`` with lone surrogates in every string replaced (``?``), so it encodes as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "replace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON of ``value``, whatever strings it holds."""
    return json.dumps(clean(value), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def one_line(error: MemoryRouterError) -> str:
    """The error as the CLI prints it, on one line: message, then the hint."""
    text = " ".join(error.message.split())
    if error.hint:
        text += f" (hint: {' '.join(error.hint.split())})"
    return text


def search_result(response: SearchResponse) -> dict[str, Any]:
    """OpenClaw's ``memory_search`` answer."""
    results = []
    for hit in response.results:
        item: dict[str, Any] = {
            "path": hit.path,
            "startLine": hit.start_line,
            "endLine": hit.end_line,
            "score": round(hit.score, 4),
            "snippet": hit.snippet,
            "source": hit.source,
        }
        if hit.citation:
            item["citation"] = hit.citation
        if hit.entry is not None:
            item["entry"] = entry_result(hit.entry)
        results.append(item)
    fallback = response.fallback
    answer: dict[str, Any] = {
        "results": results,
        "backend": response.backend,
        "provider": response.provider,
        "model": response.model,
        "mode": response.mode,
        "citations": response.citations,
        "fallback": {"from": fallback.from_, "reason": fallback.reason} if fallback else None,
    }
    if response.notes:
        answer["notes"] = list(response.notes)
    return clean(answer)  # type: ignore[no-any-return]


def entry_result(entry: Entry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "text": entry.text,
        "category": entry.category,
        "importance": entry.importance,
        "createdAt": entry.created_at.isoformat(),
    }
