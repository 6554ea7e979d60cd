"""The SQLite sync pipeline: only changed chunks are embedded, length-sorted batches off
the main thread, and a progress count in chunks (what the CLI's rate and ETA use)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from memory_router import Router, hookimpl, testing
from memory_router.kit import ProviderContext, ProviderSpec
from memory_router.testing import HashingEmbedder


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, recording every call's texts and thread."""

    id = "counting"
    model = "counting-384"
    calls: ClassVar[list[tuple[list[str], str]]] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        CountingEmbedder.calls.append((list(texts), threading.current_thread().name))
        return super().embed_documents(texts)


class CountingPlugin:
    @staticmethod
    @hookimpl
    def register_embedding_providers(register: Callable[[ProviderSpec], None]) -> None:
        def factory(context: ProviderContext, model: str) -> CountingEmbedder:
            return CountingEmbedder()

        register(ProviderSpec(name="counting", factory=factory))


def router(tmp_path: Path, workspace: Path) -> Router:
    config = testing.router_config(tmp_path, workspace, backend="sqlite", embedding="counting")
    return Router.from_config(config, plugins=[testing, CountingPlugin])


def embedded_texts() -> list[str]:
    return [text for texts, _ in CountingEmbedder.calls for text in texts]


@pytest.mark.slow
def test_editing_one_file_of_ten_thousand_embeds_only_its_changed_chunks(tmp_path: Path) -> None:
    files = {
        f"memory/n{i:05d}.md": f"# note {i}\n\nfact {i} about topic{i % 7}\n" for i in range(10_000)
    }
    sections = [f"## part {p}\n\n" + f"detail {p} of the long plan. " * 40 for p in range(6)]
    files["memory/plan.md"] = "# plan\n\n" + "\n\n".join(sections) + "\n"
    workspace = testing.write_workspace(tmp_path / "ws", files)
    CountingEmbedder.calls.clear()
    with router(tmp_path, workspace) as memory:
        first = memory.sync()[0]
        assert first.added == 10_001
        assert first.embedded == first.chunks == len(embedded_texts())
        CountingEmbedder.calls.clear()
        sections[3] = "## part 3\n\nthe plan changed: we ship on Friday instead.\n"
        (workspace / "memory/plan.md").write_text("# plan\n\n" + "\n\n".join(sections) + "\n")
        second = memory.sync()[0]
        doc = next(d for d in memory.snapshot().documents if d.path == "memory/plan.md")
        plan_chunks = {c.text for c in memory.snapshot().chunks(doc)}
    assert (second.updated, second.unchanged, second.added) == (1, 10_000, 0)
    texts = embedded_texts()
    assert texts, "the edited file was not re-embedded"
    assert set(texts) <= plan_chunks  # nothing from the other 10,000 files
    assert len(texts) < len(plan_chunks)  # unchanged sections of plan.md came from the cache
    assert second.embedded == len(texts)


def test_batches_are_sorted_by_length_and_embedded_off_the_main_thread(tmp_path: Path) -> None:
    files = {
        f"memory/n{i:03d}.md": f"# n{i}\n\n" + "word " * ((i * 37) % 300 + 1) + "\n"
        for i in range(60)
    }
    workspace = testing.write_workspace(tmp_path / "ws", files)
    CountingEmbedder.calls.clear()
    seen: list[tuple[int, int, str]] = []
    with router(tmp_path, workspace) as memory:

        def progress(*, done: int, total: int, label: str) -> None:
            seen.append((done, total, label))

        report = memory.sync(progress=progress)[0]
    lengths = [len(t) for t in embedded_texts()]
    assert len(CountingEmbedder.calls) > 1  # several provider batches …
    assert lengths == sorted(lengths)  # … of ascending length, so little padding
    assert {thread for _, thread in CountingEmbedder.calls} == {"embedding"}
    assert {label for *_, label in seen} == {"embedding"}
    assert [done for done, *_ in seen] == sorted(done for done, *_ in seen)
    assert seen[-1] == (report.chunks, report.chunks, "embedding")
