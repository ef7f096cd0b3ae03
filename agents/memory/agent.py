"""One agent's memory: what the tools do, and auto-capture.

Layout below `<data_dir>/agents/<agent_id>/`: MEMORY.md (reflect), memory/YYYY-MM-DD.md
(remember, append-only), memory/knowledge/<topic>.md (learn_fact), memory/index.md
(what is stored where; regenerated when a topic is written). People's profiles and
team knowledge are shared by every agent (`Shared`, in agents/memory/shared.py);
`memory_search` ranks both together, by keywords and meaning (agents/memory/hybrid.py).
Methods are synchronous (the tools run them in a thread) and return the text the model
reads.
"""

from __future__ import annotations

from collections.abc import Callable

from agents.memory.capture import Capture, normalised
from agents.memory.files import (
    INDEX_FILE,
    KNOWLEDGE_DIR,
    MEMORY_FILE,
    AgentFiles,
    MemoryRefused,
    topic_name,
)
from agents.memory.hybrid import DEPTH, by_meaning, fuse
from agents.memory.search import Found, Hit, MemoryIndex
from agents.memory.shared import PEOPLE_DIR, TEAM_KNOWLEDGE, Shared
from bot.inbox.people import profile_key

#: capture kinds that go to the speaking person's profile, and under which heading: what
#: a person asks to be remembered is theirs, never text every conversation's prompt carries
PROFILE_SECTIONS = {
    "preference": "Preferences",
    "name": "Names",
    "place": "Places",
    "remember": "Notes",
    "about": "About",
}
FACTS_TOPIC = "facts"  # where "the API URL is ..." said outright lands (team knowledge)
RECALL_MAX_CHARS = 40_000
SCOPED_LIMIT = 40  # shared hits fetched before other conversations' archives are left out
SEARCH_MAX_CHARS = 24_000
SEARCH_LIMIT = 10  # sections a search returns (the seed's figure)
BROAD = (
    "These words are in most of your memory, so keywords do not rank these sections; "
    "add a more specific word."
)
SEPARATOR = "\n\n---\n\n"


INDEX_TEAM_TOPICS = 60  # the index is in every prompt: the team list is capped
INDEXING = "(A large file is still being indexed: its latest part is not searchable yet.)"


class AgentMemory:
    def __init__(
        self,
        agent_id: str,
        files: AgentFiles,
        index: MemoryIndex,
        inline_bytes: int,
        shared: Shared,
    ):
        self.agent_id = agent_id
        self.files = files
        self.index = index
        self.inline_bytes = inline_bytes
        self.shared = shared

    # -- the tools ---------------------------------------------------------------------
    def recall(self, days: int) -> str:
        parts = [(MEMORY_FILE, self.files.read(MEMORY_FILE))]
        parts += [(name, self.files.read(name)) for name in self.files.topics()]
        parts += [(name, self.shared.files.read(name)) for name in self.shared.topics()]
        parts += [(name, self.files.read(name)) for name in reversed(self.files.recent_days(days))]
        blocks = [f"**{name}**\n{text.strip()}" for name, text in parts if text.strip()]
        if not blocks:
            return "Your memory is empty so far."
        return _fit(blocks, RECALL_MAX_CHARS, "use memory_search for the rest")

    def remember(self, content: str, label: str = "") -> str:
        relative = self.files.append_entry(content, label)
        self.index.touched(self.files.root / relative)
        return f"Noted in {relative}."

    def reflect(self, content: str) -> str:
        path = self.files.write(MEMORY_FILE, content.strip() + "\n")
        self.index.touched(path)
        return f"MEMORY.md rewritten ({len(content):,} characters)."

    def learn_fact(self, topic: str, content: str, shared: bool = False, source: str = "") -> str:
        if shared:
            where = self.shared.learn(topic, content, f"by {self.agent_id} {source}".strip())
            self._write_index()
            return f"Stored in {where}, for every agent."
        relative = f"{KNOWLEDGE_DIR}/{topic_name(topic)}.md"
        path = self.files.write(relative, content.strip() + "\n")
        self.index.touched(path)
        self._write_index()
        return f"Stored in {relative}."

    def search(self, query: str, archives: Callable[[str], bool] | None = None) -> str:
        """Own memory, team knowledge, people's profiles and archived conversations,
        ranked together; each hit says where it comes from. `archives(path)` says which
        archived conversations the asker may see (their own conversation's: scope)."""
        if not query.strip():
            raise MemoryRefused("the query is empty; give a few words to look for")
        self.index.refresh()
        self.shared.index.refresh()
        if self.index.total_bytes() + self.shared.index.total_bytes() < self.inline_bytes:
            return self._everything()
        own = self.index.search(query, DEPTH)
        team = self.shared.index.search(query, SCOPED_LIMIT if archives else DEPTH)

        def shown(hit: Hit) -> bool:
            return archives is None or "/archive/" not in hit.path or archives(hit.path)

        team = Found([h for h in team.hits if shown(h)], team.broad)
        keywords = _merge(query, own, team, DEPTH)
        meaning = by_meaning(query, (self.index, self.shared.index), shown)
        ranked = fuse(keywords, meaning.hits) if meaning is not None else keywords
        hits = _cap_transcripts(ranked)[:SEARCH_LIMIT]
        said = meaning.note if meaning is not None else ""
        if self.index.indexing or self.shared.index.indexing:
            said = f"{said} {INDEXING}".strip()
        if not hits:
            return f"No memory matches {query!r}." + (f" {said}" if said else "")
        words = normalised(query).split()
        mine = {h.path for h in own.hits} | (meaning.first if meaning is not None else set())
        blocks = [f"**{hit.path}** ({origin(hit, mine)})\n{_excerpt(hit, words)}" for hit in hits]
        notes = [BROAD] if _broad(own, team) else []
        notes += [said] if said else []
        head = "".join(f"{n}\n\n" for n in notes)
        return head + _fit(blocks, SEARCH_MAX_CHARS, "narrow the query")

    def _everything(self) -> str:
        mine = [(p, "your memory", self.files) for p in self.files.memory_files()]
        theirs = [(p, "", self.shared.files) for p in self.shared.files.memory_files()]
        blocks = []
        for path, where, files in [*mine, *theirs]:
            text = path.read_text(encoding="utf-8", errors="replace")
            if text.strip():
                relative = files.relative(path)
                label = where or origin(Hit(relative, ""), None)
                blocks.append(f"**{relative}** ({label})\n{text.strip()}")
        if not blocks:
            return "Your memory is empty so far."
        return "Your whole memory (it is small):\n\n" + SEPARATOR.join(blocks)

    def note_about(
        self,
        person: str,
        content: str,
        person_of: Callable[[str], str | None],
        source: str = "",
    ) -> str:
        """`note_about_person`: a listed person by name or id, or someone who already
        has a profile (unlisted people are named by their platform id). The note says
        where it was written (`source`): it is shown whenever that person speaks."""
        name = self._profile_owner(person, person_of)
        noted = f"{content.strip()} (noted {source})" if source else content
        written = self.shared.note_person(name, noted, "Notes", name)
        if written is None:
            return f"{name}'s profile already says that."
        return f"Noted in {written}; every agent sees it when {name} talks to them."

    # -- corrections -------------------------------------------------------------------
    def correct(
        self,
        old: str,
        new: str | None,
        person: str | None,
        topic: str | None,
        person_of: Callable[[str], str | None],
    ) -> str:
        """`update_note` / `forget`: one line of a person's profile or a team fact."""
        if bool(person) == bool(topic):
            raise MemoryRefused("give either `person` (a profile) or `topic` (a team fact)")
        if person:
            name = self._profile_owner(person, person_of)
            where = f"{name}'s profile"
            relative = self.shared.correct(self.shared.profile_path(name), old, new, where)
        else:
            relative = f"{TEAM_KNOWLEDGE}/{topic_name(topic or '')}.md"
            self.shared.correct(relative, old, new, f"the team fact {topic_name(topic or '')}")
        return f"{'Replaced' if new is not None else 'Removed'} the line in {relative}."

    def _profile_owner(self, person: str, person_of: Callable[[str], str | None]) -> str:
        name = person_of(person)
        if name is None and profile_key(person) in self.shared.people():
            name = person.strip()
        if name is None:
            known = ", ".join(self.shared.people()[:40]) or "none yet"
            raise MemoryRefused(
                f"no person called {person[:80]!r}; give a name from the people list or the "
                f"platform id of someone who talked to you (profiles: {known})"
            )
        return name

    # -- profiles and capture ----------------------------------------------------------
    def capture(
        self, items: list[Capture], person: str | None, display: str, where: str = ""
    ) -> list[str]:
        """Note what a person said outright (`captures` of their message), or an agent's
        own decisions (`person` None, `display` the agent); `where` is the conversation.
        Returns the files written, leaving out what memory already holds."""
        sources = [MEMORY_FILE, *self.files.recent_days(2)]
        known = [normalised(self.files.read(name)) for name in sources]
        written: list[str] = []
        for item in items:
            needle = normalised(item.text)
            if any(needle in text for text in known):
                continue
            at = self._capture_one(item, person, display, where)
            if at is not None:
                written.append(at)
            known.append(needle)
        return written

    def _capture_one(
        self, item: Capture, person: str | None, display: str, where: str
    ) -> str | None:
        section = PROFILE_SECTIONS.get(item.kind)
        if section is not None and person:
            return self.shared.note_person(person, item.text, section, display)
        source = f"{'said by' if person else 'decided by'} {display}"
        source += f" in {where}" if where else ""
        if item.kind == "decision":  # the dated decisions log, its source named
            return self.shared.add_decision(item.text, source)
        if item.kind == "fact" and person:  # a newer value replaces the older one
            return self.shared.add_note(FACTS_TOPIC, item.text, source)
        return None  # nobody to file it under: nothing lands where every prompt reads

    def published(self, task: str, result: str) -> str:
        """A worker's reflection when it publishes: its task and result, in its log."""
        text = f"Task: {task.strip()[:2000]}\n\nResult: {result.strip()[:6000]}"
        return self.remember(text, "task published")

    # -- index.md ----------------------------------------------------------------------
    def _write_index(self) -> None:
        lines = [
            "# Memory index",
            "",
            "What is stored where (written by Switchboard when this agent learns a topic).",
            "",
            "- MEMORY.md: curated long-term memory (reflect)",
            "- memory/YYYY-MM-DD.md: daily logs, append-only (remember)",
            f"- {PEOPLE_DIR}/<person>.md (shared): what each person prefers",
            "- team/knowledge/<topic>.md (shared): what the whole team knows",
            "",
            "## Knowledge topics",
        ]
        for name in self.files.topics():
            lines.append(f"- {name}: {_first_line(self.files.read(name))}")
        lines += ["", "## Team topics (shared)"]
        team = self.shared.topics()
        for name in team[:INDEX_TEAM_TOPICS]:
            lines.append(f"- {name}: {_first_line(self.shared.files.read(name))}")
        if len(team) > INDEX_TEAM_TOPICS:
            lines.append(f"- and {len(team) - INDEX_TEAM_TOPICS} more (memory_search finds them)")
        path = self.files.write(INDEX_FILE, "\n".join(lines) + "\n")
        self.index.touched(path)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip().lstrip("#").strip()[:100]
    return "(empty)"


def _fit(blocks: list[str], limit: int, hint: str) -> str:
    """Join blocks within `limit` characters; the last blocks (the oldest logs, the
    weakest hits) are left out first, with a note saying so."""
    kept: list[str] = []
    size = 0
    for block in blocks:
        if size + len(block) > limit and kept:
            break
        kept.append(block[:limit])
        size += len(block) + len(SEPARATOR)
    text = SEPARATOR.join(kept)
    left = len(blocks) - len(kept)
    if left:
        text += f"\n\n({left} more part(s) left out to keep this short; {hint}.)"
    return text


def origin(hit: Hit, mine: set[str] | None) -> str:
    """Where a hit comes from, in words the model can pass on (`mine`: paths of the
    agent's own index; the shared index's paths never look like them)."""
    if mine is not None and hit.path in mine:
        return "your memory"
    path = hit.path
    if path.startswith(f"{PEOPLE_DIR}/"):
        return f"profile of {path.rsplit('/', 1)[-1].removesuffix('.md')}"
    if path.startswith("team/knowledge/"):
        return "team knowledge"
    if path.startswith("team/decisions/"):
        return "team decisions log"
    if path.startswith("agents/") and "/archive/" in path:
        return f"archived conversation of {path.split('/')[1]}"
    return "shared"


def _merge(query: str, own: Found, team: Found, limit: int = SEARCH_LIMIT) -> list[Hit]:
    """Both lists ranked together: by how many query words a hit holds, then bm25."""
    words = set(normalised(query).split())
    hits = [*own.hits, *team.hits]
    lowered = {id(hit): hit.text.lower() for hit in hits}

    def key(hit: Hit) -> tuple[int, bool, float]:
        # curated notes before raw transcripts that hold as many of the words
        raw = hit.path.endswith(".jsonl")
        return (-sum(w in lowered[id(hit)] for w in words), raw, hit.score)

    return _cap_transcripts(sorted(hits, key=key))[:limit]


def _cap_transcripts(ranked: list[Hit]) -> list[Hit]:
    """At most `TRANSCRIPT_HITS` archived-conversation passages, the best ones."""
    raw = [h for h in ranked if h.path.endswith(".jsonl")][:TRANSCRIPT_HITS]
    return [h for h in ranked if not h.path.endswith(".jsonl") or h in raw]


EXCERPT_CHARS = 300
TRANSCRIPT_HITS = 2  # at most this many archive passages per search


def _excerpt(hit: Hit, words: list[str]) -> str:
    """A curated section whole; an archived transcript's chunk cut around its first
    match (transcripts are long and the model needs only the passage)."""
    text = hit.text.strip()
    if not hit.path.endswith(".jsonl") or len(text) <= EXCERPT_CHARS:
        return text
    lowered = text.lower()
    at = min((i for w in words if (i := lowered.find(w)) >= 0), default=0)
    start = max(0, at - EXCERPT_CHARS // 3)
    head = text.split("\n", 1)[0]
    body = text[start : start + EXCERPT_CHARS]
    return f"{head}\n…{body}…" if start else f"{body}…"


def _broad(*found: Found) -> bool:
    """Every index that matched matched only common words."""
    matched = [f for f in found if f.hits]
    return bool(matched) and all(f.broad for f in matched)
