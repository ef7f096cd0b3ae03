"""Keywords and meaning, fused: `memory_search`'s ranking in hybrid mode.

Two ranked lists of sections: by keywords (FTS5 bm25, as agent.py's `_merge` orders
them across the agent's own index and the shared one) and by meaning (cosine similarity
of the section's embedding to the query's). Reciprocal rank fusion (Cormack et al.,
2009): a section scores the sum, over the lists that hold it, of 1 / (60 + its rank
there), ranks counted from 1; ties keep the keyword list's order. So a section both
lists rank high comes first, and one only a single list found still gets in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agents.memory.search import Hit, MemoryIndex

RRF_K = 60
DEPTH = 20  # sections taken from each list before fusing
MIN_SIMILARITY = 0.2  # a weaker cosine is no match (a query about nothing stored)


@dataclass(frozen=True, slots=True)
class Meaning:
    hits: list[Hit]
    note: str  # '' or what the model reads about how the search ranked
    first: frozenset[str] = frozenset()  # paths of the hits from the first index


def key(hit: Hit) -> tuple[str, str]:
    return hit.path, hit.text


def fuse(*lists: list[Hit], k: int = RRF_K) -> list[Hit]:
    """Reciprocal rank fusion of ranked lists (the first list wins ties)."""
    scores: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], Hit] = {}
    for ranked in lists:
        for rank, hit in enumerate(ranked, start=1):
            scores[key(hit)] = scores.get(key(hit), 0.0) + 1.0 / (k + rank)
            first.setdefault(key(hit), hit)
    return sorted(first.values(), key=lambda hit: -scores[key(hit)])


def by_meaning(
    query: str,
    indexes: tuple[MemoryIndex, ...],
    shown: Callable[[Hit], bool] = lambda hit: True,
) -> Meaning | None:
    """The sections closest in meaning to `query` over `indexes`, best first; None when
    the indexes have no vectors (the setting says keywords)."""
    vectors = [index.vectors for index in indexes if index.vectors is not None]
    if not vectors:
        return None
    query_vectors = vectors[0].embedder.embed([query])
    left = [v.catch_up() for v in vectors] if query_vectors is not None else [-1]
    if query_vectors is None or -1 in left:
        return Meaning([], "(Searched by keywords only: the meaning model is unavailable.)")
    found = [v.nearest(query_vectors[0], DEPTH, MIN_SIMILARITY) for v in vectors]
    first = frozenset(h.path for h in found[0]) if indexes[0].vectors is not None else frozenset()
    hits = [h for each in found for h in each if shown(h)]
    hits = sorted(hits, key=lambda hit: -hit.score)[:DEPTH]
    waiting = sum(left)
    note = (
        f"(Meaning is still being indexed: {waiting:,} sections are found by keywords only "
        "for now.)"
        if waiting
        else ""
    )
    return Meaning(hits, note, first)
