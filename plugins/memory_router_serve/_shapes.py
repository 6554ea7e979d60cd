"""Answers as agents see them: OpenClaw's tool shapes, and JSON that is always valid UTF-8."""

from __future__ import annotations

import json
from typing import Any

from memory_router import (
    Entry,
    EntryMatch,
    ForgetResult,
    MemoryRouterError,
    RecallResult,
    SearchResponse,
    StoreResult,
)


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
    try:  # almost always: walking every string first to look for lone surrogates cost more
        return _compact(value).encode("utf-8")
    except UnicodeEncodeError:
        return _compact(clean(value)).encode("utf-8")


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


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
    answer.update(guidance(response))
    return clean(answer)  # type: ignore[no-any-return]


def guidance(response: SearchResponse) -> dict[str, Any]:
    """``belowMinScore`` (an empty answer with weaker hits, and the ``minScore`` that shows
    them) and ``degraded`` (an answer less complete than usual), each with what to do."""
    out: dict[str, Any] = {}
    below = response.below_min_score
    if below is not None:
        action = (
            f"No result reached minScore {below.min_score:g}; {below.count} weaker"
            f" match(es) exist (best {below.best_score:.3f}). Call memory_search again"
            f" with minScore {below.show_with:g} to see them, and treat them as uncertain."
        )
        if below.kept:
            action = (
                f"No result reached minScore {below.min_score:g}: these are the closest"
                f" keyword matches (best {below.best_score:.3f}); treat them as uncertain."
            )
        out["belowMinScore"] = {
            "count": below.count,
            "bestScore": round(below.best_score, 4),
            "minScore": below.min_score,
            "showWith": below.show_with,
            "kept": below.kept,
            "action": action,
        }
    if response.degraded is not None:
        out["degraded"] = response.degraded.to_dict()
    return out


def entry_result(entry: Entry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "text": entry.text,
        "category": entry.category,
        "importance": entry.importance,
        "createdAt": entry.created_at.isoformat(),
    }


def match_result(match: EntryMatch) -> dict[str, Any]:
    return {
        **entry_result(match.entry),
        "score": round(match.score, 4),
        "similarity": round(match.similarity, 4),
        "path": match.path,
        "startLine": match.start_line,
        "endLine": match.end_line,
    }


def store_result(result: StoreResult) -> dict[str, Any]:
    """OpenClaw's ``memory_store`` answer: ``created``, or ``duplicate`` with the existing one;
    ``redacted`` names the kinds of secret masked in the text (``[]`` when none was)."""
    answer: dict[str, Any] = {
        "action": result.action,
        "id": result.entry.id,
        "entry": entry_result(result.entry),
        "redacted": list(result.redacted),
    }
    if result.action == "duplicate":
        answer["existingId"] = result.entry.id
        answer["existingText"] = result.entry.text
        answer["similarity"] = result.similarity
    return clean(answer)  # type: ignore[no-any-return]


def recall_result(result: RecallResult) -> dict[str, Any]:
    """OpenClaw's ``memory_recall`` answer: ``{count, memories}``, best first."""
    memories = [match_result(m) for m in result.results]
    return clean({"count": len(memories), "memories": memories, "method": result.method})  # type: ignore[no-any-return]


def forget_result(result: ForgetResult) -> dict[str, Any]:
    """``deleted`` with the entry, or ``candidates`` to pick an id from."""
    if result.deleted is not None:
        entry = result.deleted
        return clean({"action": "deleted", "id": entry.id, "entry": entry_result(entry)})  # type: ignore[no-any-return]
    candidates = [match_result(m) for m in result.candidates]
    message = (
        "No entry matches closely enough; nothing was deleted."
        if not candidates
        else "Several entries (or none closely enough) match; nothing was deleted. "
        "Call memory_forget again with the id of the one to delete."
    )
    return clean({"action": "candidates", "candidates": candidates, "message": message})  # type: ignore[no-any-return]
