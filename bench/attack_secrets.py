"""Attack: how many kinds of secret stay recoverable after session transcripts are indexed.

    .venv/bin/python bench/attack_secrets.py [--backends sqlite,qmd] [--detect-secrets]

The corpus is ``memory_router/testing/_secrets.py`` (one conversation per kind of secret),
loaded from this checkout by path, so the same corpus can attack an older version of the
package: put that version first on the path, for example

    git worktree add /tmp/before <commit>
    PYTHONPATH=/tmp/before/router:/tmp/before/backends:/tmp/before/plugins \\
        .venv/bin/python bench/attack_secrets.py

For each backend the corpus is written as two transcripts, indexed with
``sources = ["memory", "sessions"]`` (keyword-only), and each secret counts as
recoverable when a search for it returns a snippet holding it (or its middle, which a mask
never shows), or when any file under the state directory holds it (SQLite index, QMD
index, QMD's sessions export…). ``--detect-secrets`` also reports how many of the same
secrets the detect-secrets scanner (if installed) finds on its own, line by line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from memory_router import MemoryRouterError, Router

ROOT = Path(__file__).resolve().parents[1]


def load_corpus() -> ModuleType:
    path = ROOT / "router" / "memory_router" / "testing" / "_secrets.py"
    spec = importlib.util.spec_from_file_location("secret_corpus", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load the corpus from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["secret_corpus"] = module
    spec.loader.exec_module(module)
    return module


def write_transcript(path: Path, cases: Any) -> None:
    records: list[dict[str, Any]] = [{"type": "session", "id": path.stem}]
    for case in cases:
        for text in case.messages:
            records.append({"type": "message", "message": {"role": "user", "content": text}})
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def recoverable(snippets: list[str], state: Path, secret: str) -> tuple[bool, bool]:
    """(found by search, found on disk) for one secret."""
    middle = secret[6:-4]
    by_search = any(secret in s or middle in s for s in snippets)
    needle = secret.encode("utf-8")
    on_disk = any(p.is_file() and needle in p.read_bytes() for p in state.rglob("*"))
    return by_search, on_disk


def attack(backend: str, cases: Any, root: Path) -> dict[str, tuple[bool, bool]]:
    workspace = root / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Memory\n\nNothing secret here.\n", encoding="utf-8")
    sessions = root / "sessions"
    sessions.mkdir()
    half = len(cases) // 2
    write_transcript(sessions / "a.jsonl", cases[:half])
    write_transcript(sessions / "b.jsonl", cases[half:])
    config = root / "memory-router.toml"
    extra = "[backends.qmd]\nupdate_on_boot = false\n" if backend == "qmd" else ""
    config.write_text(
        f"workspace = {json.dumps(str(workspace))}\n"
        f"state_dir = {json.dumps(str(root / 'state'))}\n"
        f'sources = ["memory", "sessions"]\nsessions_dir = {json.dumps(str(sessions))}\n'
        f'[embedding]\nprovider = "none"\n[router]\nchain = ["{backend}"]\n{extra}',
        encoding="utf-8",
    )
    results: dict[str, tuple[bool, bool]] = {}
    with Router.from_config(config) as router:
        router.sync()
        for case in cases:
            hits = router.search(case.secret, min_score=0.0, max_results=20).results
            results[case.kind] = recoverable([h.snippet for h in hits], root / "state", case.secret)
    return results


def detect_secrets_findings(cases: Any, near_misses: Any) -> tuple[int, int, int]:
    """What detect-secrets' own scan (default plugins and filters) finds in the corpus:
    (secrets whose value it reports, conversations it flags, near-misses it flags)."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    def findings(text: str) -> list[str]:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "transcript.txt"
            path.write_text(text + "\n", encoding="utf-8")
            collection = SecretsCollection()
            with default_settings():
                collection.scan_file(str(path))
            return [str(s.secret_value) for _, s in collection]

    spans = flagged = 0
    for case in cases:
        values = findings("\n".join(case.messages))
        flagged += bool(values)
        spans += any(v and (v in case.secret or case.secret[6:-4] in v) for v in values)
    false_alarms = sum(bool(findings(text)) for text in near_misses)
    return spans, flagged, false_alarms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="sqlite,qmd")
    parser.add_argument("--detect-secrets", action="store_true")
    args = parser.parse_args()
    corpus = load_corpus()
    cases = corpus.SECRET_CASES
    print(f"corpus: {len(cases)} kinds of secret")
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory(prefix=f"attack-{backend}-") as tmp:
            try:
                results = attack(backend, cases, Path(tmp))
            except MemoryRouterError as error:
                print(f"{backend}: skipped ({error.message})")
                continue
        leaked = sorted(kind for kind, (search, disk) in results.items() if search or disk)
        print(f"{backend}: {len(leaked)} of {len(cases)} recoverable")
        for kind in leaked:
            search, disk = results[kind]
            print(f"  {kind}: {'search ' if search else ''}{'disk' if disk else ''}".rstrip())
    if args.detect_secrets:
        spans, flagged, false_alarms = detect_secrets_findings(cases, corpus.NEAR_MISSES)
        print(
            f"detect-secrets: reports the secret itself for {spans} of {len(cases)}, "
            f"flags {flagged} of {len(cases)} conversations and "
            f"{false_alarms} of {len(corpus.NEAR_MISSES)} near-misses"
        )


if __name__ == "__main__":
    main()
