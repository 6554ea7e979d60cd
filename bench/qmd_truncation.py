"""How much of what QMD embeds does all-MiniLM-L6-v2 see? (issue 23, item 5)

QMD 2.8.3 chunks documents at up to 900 tokens (``CHUNK_SIZE_TOKENS``, a constant: no
setting or environment variable changes it) with 135 tokens of overlap, and truncates
each formatted chunk (``title: … | text: …``) to the embed model's trained context minus
4 tokens (``LlamaCpp.truncateToContextSize``, with a warning on stderr): 508 of
MiniLM's 512. It does not fail. This reads a QMD index built with the offline MiniLM
(chunk positions from ``content_vectors``), re-tokenises each chunk with the same GGUF,
and reports the chunks cut, the share of characters no vector covers, and the share of
LoCoMo evidence turns (of the index's conversation) that lie wholly outside every
embedded span — those a vector search can only find through their chunk's head.

    .venv/bin/python bench/qmd_truncation.py --index STATE/qmd/cache/qmd/memrouter.sqlite \\
        --model STATE/qmd/models/all-MiniLM-L6-v2.f32.gguf --conversation conv-26
"""

from __future__ import annotations

import argparse
import re
import sqlite3
from pathlib import Path

from memory_router._ops.bench_data import load_locomo

OVERLAP_CHARS = 135 * 3  # QMD's first-pass estimate: 3 characters a token
LIMIT = 512 - 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--conversation", default="conv-26")
    parser.add_argument("--data", default="/work/shared/data/locomo/locomo10.json")
    args = parser.parse_args()
    import llama_cpp

    llm = llama_cpp.Llama(model_path=args.model, embedding=True, n_ctx=512, verbose=False)
    db = sqlite3.connect(f"file:{args.index}?mode=ro", uri=True)
    rows = db.execute(
        "SELECT d.path, d.title, c.doc, v.seq, v.pos FROM documents d JOIN content c"
        " ON c.hash = d.hash JOIN content_vectors v ON v.hash = d.hash WHERE d.active = 1"
        " ORDER BY d.path, v.seq"
    ).fetchall()
    group = next(g for g in load_locomo(Path(args.data)).groups if g.name == args.conversation)
    wanted = {dia for q in group.queries for dia in q.relevant}
    by_doc: dict[str, list[tuple[str, str, int]]] = {}
    for path, title, body, _seq, pos in rows:
        by_doc.setdefault(path, []).append((title, body, pos))
    chunks = cut = chars = seen = turns = lost = 0
    for parts in by_doc.values():
        body = parts[0][1]
        covered = [False] * len(body)
        for i, (title, _, pos) in enumerate(parts):
            end = parts[i + 1][2] + OVERLAP_CHARS if i + 1 < len(parts) else len(body)
            text = body[pos:end]
            prefix = f"title: {title or 'none'} | text: "
            ids = llm.tokenize((prefix + text).encode(), add_bos=True)
            chunks += 1
            if len(ids) > LIMIT:
                cut += 1
                kept = llm.detokenize(ids[:LIMIT]).decode(errors="ignore")
                text = text[: max(0, len(kept) - len(prefix))]
            for j in range(pos, min(len(body), pos + len(text))):
                covered[j] = True
        chars += len(body)
        seen += sum(covered)
        offset = 0
        for line in body.split("\n"):
            found = re.match(r"\[(D\d+:\d+)\]", line)
            if found and found[1] in wanted:
                turns += 1
                lost += not any(covered[offset : offset + len(line)])
            offset += len(line) + 1
    print(f"chunks {chunks}, cut to {LIMIT} tokens: {cut} ({cut / max(1, chunks):.0%})")
    print(f"characters no vector covers: {1 - seen / max(1, chars):.1%} of {chars}")
    print(f"evidence turns wholly outside every embedded span: {lost}/{turns}")


if __name__ == "__main__":
    main()
