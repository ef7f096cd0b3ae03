"""memory_search by meaning (issue 34 item 2): keywords (FTS5 bm25) and meaning (the
bundled WordLlama model) fused by reciprocal rank fusion; embeddings stored in the
derived index, reused, rebuilt; one warning and keywords only when the model fails."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from agents.memory import Memory
from agents.memory.embedding import Embedder, load_wordllama
from agents.memory.hybrid import fuse
from agents.memory.search import Hit
from config.settings import SettingsError
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, make_settings, running_app
from tests.kits.memory_kit import call, memory_at, toolbox
from tests.memory.test_memory_search import fill

ROOT = Path(__file__).resolve().parents[2]
SEP = "\n\n---\n\n"
POSTGRES = "## Storage\nWe run Postgres 16 on db-1; backups nightly at 02:00."


class Counting(Embedder):
    """The real model, counting the texts it embeds."""

    def __init__(self, loader: Any = load_wordllama) -> None:
        super().__init__(loader)
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> Any:
        self.texts += texts
        return super().embed(texts)


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Counting:
    counting = Counting()
    monkeypatch.setattr("agents.memory.MODEL", counting)
    return counting


def blocks(result: str) -> list[str]:
    return result.split(SEP)


def vectors_in(index: Path) -> int:
    with sqlite3.connect(index) as db:
        return int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])


async def test_database_finds_the_section_about_postgres(tmp_path: Path, model: Counting) -> None:
    box = toolbox(memory_at(tmp_path))
    fill(tmp_path / "agents/coordinator")  # 630 sections: over the inline limit
    await call(box, "learn_fact", topic="infra", content=POSTGRES)
    result = (await call(box, "memory_search", query="database")).text
    assert "We run Postgres 16" in blocks(result)[0]
    keywords = memory_at(tmp_path / "k", SWITCHBOARD_MEMORY_SEARCH="keywords")
    fill(tmp_path / "k/agents/coordinator")
    kbox = toolbox(keywords)
    await call(kbox, "learn_fact", topic="infra", content=POSTGRES)
    assert "Postgres" not in (await call(kbox, "memory_search", query="database")).text


def test_reciprocal_rank_fusion_on_a_small_case() -> None:
    """Each section scores 1/(60 + rank) in each list holding it: b (2nd by keywords,
    1st by meaning) 1/62 + 1/61 beats a (1st by keywords only) 1/61, which ties with
    nothing; d (2nd by meaning) 1/62 beats c (3rd by keywords) 1/63."""
    a, b, c, d = (Hit(f"{n}.md", n) for n in "abcd")
    assert fuse([a, b, c], [b, d]) == [b, a, d, c]
    # a tie keeps the keyword list's order: a and c both score 1/61 + 1/63
    assert fuse([a, b, c], [c, d, a]) == [a, c, b, d]


async def test_an_exact_keyword_hit_still_ranks_first(tmp_path: Path, model: Counting) -> None:
    box = toolbox(memory_at(tmp_path))
    fill(tmp_path / "agents/coordinator")
    await call(box, "learn_fact", topic="infra", content=POSTGRES)
    await call(box, "learn_fact", topic="tickets", content="## PG-4471\nThe vacuum job stalls.")
    result = (await call(box, "memory_search", query="PG-4471")).text
    assert "The vacuum job stalls." in blocks(result)[0]


async def test_a_search_returns_at_most_ten_sections(tmp_path: Path, model: Counting) -> None:
    box = toolbox(memory_at(tmp_path))
    fill(tmp_path / "agents/coordinator")
    result = (await call(box, "memory_search", query="routine status of service item")).text
    assert len(blocks(result)) == 10


async def test_embeddings_are_stored_reused_and_rebuilt(tmp_path: Path, model: Counting) -> None:
    memory = memory_at(tmp_path, SWITCHBOARD_MEMORY_RESCAN_SECONDS="0")
    box = toolbox(memory)
    agent = tmp_path / "agents/coordinator"
    fill(agent)
    await call(box, "memory_search", query="database")
    index = agent / ".search.sqlite"
    assert vectors_in(index) == 630  # one per section, in the derived index
    assert len(model.texts) == 631  # 630 sections and the query
    model.texts.clear()
    topic = agent / "memory/knowledge/topic-3.md"  # a file changes: only its new section
    topic.write_text(topic.read_text() + "\n" + POSTGRES + "\n")
    await call(box, "memory_search", query="database")
    assert [t.strip() for t in model.texts] == ["database", POSTGRES]
    assert vectors_in(index) == 631
    memory.close()
    for leftover in agent.glob(".search.sqlite*"):  # lost: rebuilt from the markdown
        leftover.unlink()
    model.texts.clear()
    result = (await call(box, "memory_search", query="database")).text
    assert "We run Postgres 16" in blocks(result)[0]
    assert len(model.texts) == 632 and vectors_in(index) == 631


async def test_a_model_that_cannot_load_degrades_to_keywords_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> Any:
        raise OSError("weights file is truncated")

    monkeypatch.setattr("agents.memory.MODEL", Embedder(broken))
    box = toolbox(memory_at(tmp_path))
    fill(tmp_path / "agents/coordinator")
    await call(box, "learn_fact", topic="infra", content=POSTGRES)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            result = (await call(box, "memory_search", query="postgres backups")).text
            assert result.startswith("(Searched by keywords only")
            assert "We run Postgres 16" in blocks(result)[0].split("\n\n", 1)[1]
        database = (await call(box, "memory_search", query="database")).text
    assert "Postgres" not in database
    warnings = [r for r in caplog.records if "embedding model did not load" in r.getMessage()]
    assert len(warnings) == 1 and "weights file is truncated" in warnings[0].getMessage()


NO_NETWORK = """
import socket, sys
def refuse(*args, **kwargs):
    raise OSError("network is blocked in this test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
sys.path.insert(0, {root!r})
from agents.memory.embedding import Embedder
model = Embedder()
assert model.ready(), model.failed
vectors = model.embed(["which database do we run", "We run Postgres 16 on db-1"])
print(vectors.shape, float(vectors[0] @ vectors[1]))
"""


def test_the_model_loads_with_the_network_blocked() -> None:
    code = NO_NETWORK.format(root=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert out.returncode == 0, out.stderr
    shape, similarity = out.stdout.rsplit(")", 1)
    assert shape == "(2, 256" and float(similarity) > 0.2


LAZY = """
import sys, tempfile
from pathlib import Path
sys.path.insert(0, {root!r})
from tests.kits.memory_kit import memory_at
from agents.services import AgentInfo
with tempfile.TemporaryDirectory() as tmp:
    memory = memory_at(Path(tmp))
    agent = memory.agent("coordinator")
    agent.remember("Ann owns billing.")
    print(agent.search("billing")[:20], "|", sorted(
        m for m in ("numpy", "wordllama", "tokenizers") if m in sys.modules))
"""


def test_a_small_memory_is_answered_without_loading_the_model() -> None:
    out = subprocess.run(
        [sys.executable, "-c", LAZY.format(root=str(ROOT))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.stdout.strip() == "Your whole memory (i | []", out.stderr


async def test_bad_input_broken_markdown_and_empty_memory(tmp_path: Path, model: Counting) -> None:
    box = toolbox(memory_at(tmp_path))
    assert (await call(box, "memory_search", query="database")).text == (
        "Your memory is empty so far."
    )
    agent = tmp_path / "agents/coordinator"
    fill(agent)
    broken = agent / "memory/knowledge/broken.md"
    broken.write_bytes(
        b"## Storage\n```\nunclosed fence \xff\xfe\x00 Postgres runs on db-1\n## ##\n\n###\n"
        + b"\x00" * 100
    )
    (agent / "memory/knowledge/headings.md").write_text("## \n### \n## \n")
    result = (await call(box, "memory_search", query="database")).text
    assert "Postgres runs on db-1" in result


async def test_two_writers_at_once_share_one_index(tmp_path: Path, model: Counting) -> None:
    """Two processes' memories (two Memory objects) search the same data dir at once."""
    fill(tmp_path / "agents/coordinator")
    (tmp_path / "team/knowledge").mkdir(parents=True)
    (tmp_path / "team/knowledge/infra.md").write_text(POSTGRES + "\n")
    memories = [memory_at(tmp_path), memory_at(tmp_path)]
    results: list[str] = []
    errors: list[BaseException] = []

    def search(memory: Memory) -> None:
        try:
            results.append(memory.agent("coordinator").search("database"))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=search, args=(m,)) for m in memories]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all("We run Postgres 16" in blocks(r)[0] for r in results)
    assert vectors_in(tmp_path / "agents/coordinator/.search.sqlite") == 630
    assert vectors_in(tmp_path / "team/.search.sqlite") == 1


def test_a_bad_memory_search_setting_is_one_line_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as caught:
        memory_at(tmp_path, SWITCHBOARD_MEMORY_SEARCH="semantic")
    assert str(caught.value) == (
        "SWITCHBOARD_MEMORY_SEARCH: Input should be 'hybrid' or 'keywords' (got 'semantic')."
    )


@pytest.mark.slow
async def test_a_huge_daily_log_is_embedded_in_the_background(
    tmp_path: Path, model: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log of 40,000 entries (4 MB): a search answers at once, by keywords and what is
    embedded so far, saying so; a background thread embeds the rest, and then meaning
    covers it all. (The query's own embedding budget is 0 here, to make it certain.)"""
    monkeypatch.setattr("agents.memory.vectors.QUERY_SECONDS", 0.0)
    logs = tmp_path / "agents/coordinator/memory"
    logs.mkdir(parents=True)
    entries = (f"## 10:{n % 60:02d}\nDeploy {n} of billing went out; checks green." for n in
               range(40_000))  # fmt: skip
    (logs / "2026-11-27.md").write_text("\n".join(entries) + "\n" + POSTGRES + "\n")
    agent = memory_at(tmp_path).agent("coordinator")
    first = agent.search("database")
    assert first == (
        "No memory matches 'database'. (Meaning is still being indexed: 40,001 sections are "
        "found by keywords only for now.)"
    )
    vectors = agent.index.vectors
    assert vectors is not None
    for _ in range(600):  # the background thread, at most half a core
        if not vectors._draining:
            break
        await asyncio.sleep(0.5)
    assert vectors.pending == 0
    later = agent.search("database")
    assert later.startswith("**memory/2026-11-27.md** (your memory)\n## Storage\nWe run Postgres")


@pytest.mark.slow
async def test_search_is_hybrid_on_a_postgresql_backed_app(
    tmp_path: Path, fake: FakeAnthropic, pg_url: str, model: Counting
) -> None:
    """The index is a file in the data dir whatever the store: same search on PostgreSQL."""
    env = {"SWITCHBOARD_DATABASE_URL": pg_url, "SWITCHBOARD_MEMORY_INLINE_BYTES": "0"}
    async with running_app(make_settings(tmp_path / "data", fake, **env), [Recorder()]) as app:
        assert app.store.postgres
        (tmp_path / "data/team/knowledge").mkdir(parents=True, exist_ok=True)
        (tmp_path / "data/team/knowledge/infra.md").write_text(POSTGRES + "\n")
        agent = app.memory.agent("coordinator")
        found = await asyncio.to_thread(agent.search, "database")
    assert found.startswith("**team/knowledge/infra.md** (team knowledge)\n## Storage")
    assert vectors_in(tmp_path / "data/team/.search.sqlite") == 1


def test_two_processes_creating_one_index_at_once_both_get_it(tmp_path: Path) -> None:
    """200 data dirs, each opened by two memories at once (two processes) as its index
    is created: none fails (before: `journal_mode=WAL` said "database is locked", or one
    dropped the tables the other had just made, in 2-5 of 200 each run)."""
    errors: list[BaseException] = []

    def search(memory: Memory) -> None:
        try:
            memory.agent("coordinator").search("database")
        except BaseException as exc:  # reported below
            errors.append(exc)

    for n in range(200):
        notes = tmp_path / f"d{n}/agents/coordinator/memory/notes.md"
        notes.parent.mkdir(parents=True)
        notes.write_text("## Db\nWe run Postgres 16.\n" * 50)
        threads = [threading.Thread(target=search, args=(memory_at(tmp_path / f"d{n}"),))
                   for _ in range(2)]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
