"""Memory search by meaning (issue 34 item 2). Run:
`.venv/bin/python -m tests.bench.bench_memory_meaning` (`--quick`: 1,000 sections only).

Prints, for a synthetic team memory of 1,000 and 10,000 sections (the labelled facts of
tests/bench/meaning_set.py in team knowledge, the rest routine daily-log entries):
1. `memory_search` p50/p99 (ms, the whole tool path: refresh check, bm25, cosine,
   fusion, formatting), keyword-only against hybrid;
2. recall@10 on the labelled paraphrase questions (is the fact among the 10 sections
   returned), keyword-only against hybrid;
3. embedding throughput: the model alone, and end to end into the index (sections/s);
4. resident memory (RSS) before the model loads, after, and after indexing.
Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agents.memory import Memory
from agents.memory.agent import AgentMemory
from agents.memory.embedding import MODEL
from tests.bench.meaning_set import FACTS
from tests.kits.memory_kit import memory_at

PEOPLE = ["Ann", "Ben", "Chloe", "Dev", "Emil", "Fatima", "Goran", "Hana", "Ivo", "Jun"]
VERBS = ["reviewed", "updated", "discussed", "fixed", "planned", "moved", "checked", "wrote"]
THINGS = [
    "the onboarding checklist", "the quarterly report", "the API client", "a flaky test",
    "the sprint board", "the customer survey", "the style guide", "the release notes",
    "the search page", "the import script", "the mobile layout", "the pricing copy",
    "the ticket backlog", "the error messages", "the font sizes", "the email template",
]  # fmt: skip
STATES = ["all done", "waiting on feedback", "half way", "blocked until Monday", "merged",
          "needs a second look", "shipped to staging", "postponed to next week"]  # fmt: skip
SECTIONS_PER_LOG = 100


def build(root: Path, sections: int) -> None:
    """Team knowledge with the labelled facts, daily logs with routine entries."""
    rng = random.Random(sections)
    team = root / "team/knowledge"
    team.mkdir(parents=True, exist_ok=True)
    topics: dict[str, list[str]] = {}
    for topic, body, _ in FACTS:
        topics.setdefault(topic, []).append(body)
    for topic, bodies in topics.items():
        (team / f"{topic}.md").write_text(f"# {topic}\n\n" + "\n\n".join(bodies) + "\n")
    logs = root / "agents/coordinator/memory"
    logs.mkdir(parents=True, exist_ok=True)
    left = sections - len(FACTS) - len(topics)
    day = 0
    while left > 0:
        entries = []
        for n in range(min(SECTIONS_PER_LOG, left)):
            who, verb, thing = rng.choice(PEOPLE), rng.choice(VERBS), rng.choice(THINGS)
            entries.append(f"## {8 + n // 12:02d}:{n % 60:02d}\n{who} {verb} {thing}; "
                           f"{rng.choice(STATES)}.")  # fmt: skip
        (logs / f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}.md").write_text(
            "\n".join(entries) + "\n"
        )
        left -= len(entries)
        day += 1


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def agent_of(root: Path, mode: str) -> tuple[Memory, AgentMemory]:
    memory = memory_at(
        root, SWITCHBOARD_MEMORY_SEARCH=mode, SWITCHBOARD_MEMORY_RESCAN_SECONDS="3600"
    )
    return memory, memory.agent("coordinator")


def recall_at_10(agent: AgentMemory) -> float:
    found = 0
    for _, body, question in FACTS:
        blocks = agent.search(question).split("\n\n---\n\n")[:10]
        found += any(body.split("\n", 1)[1] in block for block in blocks)
    return found / len(FACTS)


def latencies(agent: AgentMemory, rounds: int) -> tuple[float, float]:
    questions = [q for _, _, q in FACTS] + [body.split("\n")[0][3:] for _, body, _ in FACTS]
    times = []
    for _ in range(rounds):
        for question in questions:
            started = time.perf_counter()
            agent.search(question)
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def embed_all(agent: AgentMemory) -> tuple[int, float]:
    """Embed every section now (what searches and the background thread do by turns)."""
    started = time.perf_counter()
    sections = 0
    for index in (agent.index, agent.shared.index):
        assert index.vectors is not None
        with index.db() as db:
            sections += db.execute("SELECT count(*) FROM digests").fetchone()[0]
        index.vectors.catch_up_now(float("inf"))
    return sections, time.perf_counter() - started


def model_throughput() -> float:
    rng = random.Random(3)
    texts = [f"## {n}\n{rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(THINGS)}; "
             f"{rng.choice(STATES)}." for n in range(10_000)]  # fmt: skip
    MODEL.embed(texts[:10])
    started = time.perf_counter()
    MODEL.embed(texts)
    return len(texts) / (time.perf_counter() - started)


def run(sections: int, rounds: int) -> None:
    root = Path(tempfile.mkdtemp(prefix=f"meaning-{sections}-"))
    build(root, sections)
    print(f"\n{sections:,} sections ({len(FACTS)} labelled facts)")
    memory, keywords = agent_of(root, "keywords")
    keywords.search("warm up")
    p50, p99 = latencies(keywords, rounds)
    recall = recall_at_10(keywords)
    print(f"  keywords: p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  recall@10 {recall:.2f}")
    memory.close()
    before = rss_mb()
    memory, hybrid = agent_of(root, "hybrid")
    MODEL.ready()  # loads the model (once per process)
    loaded = rss_mb()
    hybrid.index.refresh()
    hybrid.shared.index.refresh()
    done, seconds = embed_all(hybrid)
    print(f"  indexed {done:,} sections in {seconds:.2f} s: {done / seconds:,.0f} sections/s "
          "end to end (model, blobs, SQLite)")  # fmt: skip
    hybrid.search("warm up")
    p50, p99 = latencies(hybrid, rounds)
    recall = recall_at_10(hybrid)
    print(f"  hybrid:   p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  recall@10 {recall:.2f}")
    print(f"  RSS: {before:.0f} MB before the model, {loaded:.0f} MB after loading it, "
          f"{rss_mb():.0f} MB after indexing and searching")  # fmt: skip
    memory.close()


def main() -> None:
    quick = "--quick" in sys.argv
    print(f"RSS at start (bot imported, no model): {rss_mb():.0f} MB")
    for sections in (1_000,) if quick else (1_000, 10_000):
        run(sections, 2 if quick else 3)
    print(f"\nmodel alone: {model_throughput():,.0f} sections/s (short sections, one core)")


if __name__ == "__main__":
    main()
