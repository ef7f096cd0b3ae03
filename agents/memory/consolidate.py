"""Consolidation (reference 002): what the team said becomes team knowledge.

A scheduled job (`SWITCHBOARD_CONSOLIDATE_CRON`, nightly by default) reads the
conversations that changed since its last run — live ones from the store, and the
archives compaction wrote (`agents/*/archive/*.jsonl`) — takes only their turns it
has not read before, and, with one model call per batch, gets back topic notes and
decisions. Notes are appended to `team/knowledge/<topic>.md` and decisions to the
dated log `team/decisions/YYYY-MM-DD.md`, each skipped when what is there already
says it.

Every turn is known by a hash of its JSON, per conversation (a compacted
conversation and its archive hold many of the same turns: each is read once).
Progress lives in `team/.consolidation.json`. A batch is committed in two steps:
first its result and the progress it makes are written together to
`team/.consolidation.pending.json` (atomic), then the notes are applied, then the
progress is saved and the pending file removed. A crash before the first write
loses only the model call (the batch is read again next run); after it, the next
run applies the pending batch again — the writes are deduplicated, so nothing is
written twice — and no conversation's turns are ever read twice. A model call that
fails leaves everything as it was; the next run retries.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.errors import AgentError
from agents.memory.files import MemoryRefused, _atomic_write, topic_name
from agents.memory.shared import Shared
from agents.memory.transcripts import transcript_turn
from agents.model.llm import ModelError, ModelUnavailable
from bot.core.events import EventLog
from bot.store.core import Store

if TYPE_CHECKING:
    from agents.model.llm import Provider

log = logging.getLogger(__name__)

STATE = "team/.consolidation.json"
PENDING = "team/.consolidation.pending.json"
BATCH_CHARS = 40_000  # transcript characters per model call (~10k tokens)
MAX_BATCHES = 20  # per run; the rest waits for the next run
SEEN_PER_CONVERSATION = 20_000
FALLBACK_TOPIC = "general"
_SUMMARY = "[Summary of the earlier conversation"
CONSOLIDATE = (
    "You keep a team's shared knowledge base. You read new parts of the team's "
    "conversations with its assistant and extract what is worth keeping for everyone: "
    "facts about systems, customers and plans, conventions, and decisions the team made "
    "(with what was decided, not the discussion). Ignore small talk, questions nobody "
    "answered and anything already in the knowledge base. Answer with JSON only: "
    '{"topics": [{"topic": "short-name", "notes": ["one fact per note"]}], '
    '"decisions": [{"text": "what was decided", "conversation": "its id"}]}. '
    "Topic names are lower-case words joined by dashes; reuse an existing topic when it "
    "fits. Empty lists when there is nothing worth keeping."
)


class ConsolidationFailed(AgentError):
    """The model call or its answer failed; nothing was written."""


@dataclass(slots=True)
class Piece:
    """New turns of one conversation, as transcript text, and their hashes."""

    conversation: str
    text: str
    hashes: list[str]
    archive: str | None = None  # an archive file read to its end with this piece


@dataclass(slots=True)
class Batch:
    pieces: list[Piece] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(p.text) for p in self.pieces)


class Consolidator:
    def __init__(self, store: Store, shared: Shared, llm: Provider, events: EventLog) -> None:
        self.store = store
        self.shared = shared
        self.llm = llm
        self.events = events
        self.root = shared.files.root
        self.max_batches = MAX_BATCHES

    # -- the job -------------------------------------------------------------------------
    async def run(self) -> str:
        """One consolidation run; says what it did (also as a `team.consolidated` event)."""
        await asyncio.to_thread(self._finish_pending)
        state = self._load()
        started = time.time()
        since = float(state.get("last_run", 0)) - 60  # a margin: hashes dedupe anyway
        live = self.store.agents.conversations_since(since)  # the store lives on the loop's thread
        # reading archives and hashing turns is slow work: off the event loop
        batches = _pack(await asyncio.to_thread(self._pieces, state, live))
        done = notes = 0
        for batch in batches[: self.max_batches]:
            if not batch.size:  # only turns with nothing to read (tool calls): mark them
                _advance(state, batch)
                await asyncio.to_thread(self._save, state)
                continue
            try:
                result = await self._ask(batch)
            except ConsolidationFailed as exc:
                self.events.emit("team.consolidation_failed", "", error=str(exc), batches=done)
                return f"Consolidation stopped after {done} batch(es): {exc}"
            _advance(state, batch)
            notes += await asyncio.to_thread(self._commit, state, result)
            done += 1
        if len(batches) <= self.max_batches:  # all read: next time, only what changes after now
            state["last_run"] = started
            await asyncio.to_thread(self._save, state)
        self.events.emit("team.consolidated", "", batches=done, written=notes)
        return f"Consolidated {done} batch(es); {notes} note(s) and decision(s) written."

    # -- reading what is new -------------------------------------------------------------
    def _pieces(
        self, state: dict[str, Any], live: list[tuple[str, str, list[dict[str, Any]]]]
    ) -> list[Piece]:
        seen: dict[str, list[str]] = state["seen"]
        known: dict[str, set[str]] = {}  # per conversation, across its archives and live

        def known_of(conversation: str) -> set[str]:
            return known.setdefault(conversation, set(seen.get(conversation, [])))

        pieces: list[Piece] = []
        for relative in self._new_archives(state):
            conversation = _archive_conversation(relative)
            text = (self.root / relative).read_text("utf-8", "replace")
            messages = [m for m in (_json(line) for line in text.splitlines()) if m]
            found = _new_turns(messages, known_of(conversation))
            pieces += _chunks(conversation, found, archive=relative)
        for agent, key, messages in live:
            conversation = f"{agent}/{_slug(key)}"
            pieces += _chunks(conversation, _new_turns(messages, known_of(conversation)))
        return pieces

    def _new_archives(self, state: dict[str, Any]) -> list[str]:
        read = set(state["archives"])
        found = []
        for folder in self.shared.files.archives():
            for path in sorted(folder.glob("*.jsonl")):
                relative = self.shared.files.relative(path)
                if relative not in read:
                    found.append(relative)
        return found

    # -- the model -----------------------------------------------------------------------
    async def _ask(self, batch: Batch) -> dict[str, Any]:
        prompt = self._prompt(batch)
        try:
            response = await self.llm.complete(
                CONSOLIDATE, [], [{"role": "user", "content": prompt}], once=True
            )
        except (ModelUnavailable, ModelError) as exc:
            raise ConsolidationFailed(f"the model call failed: {exc}") from exc
        return parse(response.text)

    def _prompt(self, batch: Batch) -> str:
        topics = [
            f"- {Path(t).stem}: {_first_line(self.shared.files.read(t))}"
            for t in self.shared.topics()
        ]
        decisions = [
            line for log_ in self.shared.recent_decisions(14) for line in log_.splitlines()
        ]
        recent = [line for line in decisions if line.startswith("- ")][-60:]
        talks = "\n\n".join(
            f'<conversation id="{p.conversation}">\n{p.text}\n</conversation>' for p in batch.pieces
        )
        return (
            f"<existing_topics>\n{chr(10).join(topics) or '(none yet)'}\n</existing_topics>\n\n"
            f"<recent_decisions>\n{chr(10).join(recent) or '(none yet)'}\n"
            f"</recent_decisions>\n\n{talks}"
        )

    # -- committing ----------------------------------------------------------------------
    def _commit(self, state: dict[str, Any], result: dict[str, Any]) -> int:
        _atomic_write(self.root / PENDING, json.dumps({"state": state, "result": result}))
        written = self._apply(result)
        self._save(state)
        (self.root / PENDING).unlink(missing_ok=True)
        return written

    def _finish_pending(self) -> None:
        """A run that died after writing its pending batch: apply it (deduplicated)."""
        path = self.root / PENDING
        if not path.exists():
            return
        try:
            pending = json.loads(path.read_text("utf-8"))
        except (ValueError, OSError):
            path.unlink(missing_ok=True)  # torn: the batch is simply read again
            return
        self._apply(pending["result"])
        self._save(pending["state"])
        path.unlink(missing_ok=True)
        self.events.emit("team.consolidation_resumed", "")

    def _apply(self, result: dict[str, Any]) -> int:
        written = 0
        day = time.strftime("%Y-%m-%d")
        for entry in result.get("topics", []):
            topic = _topic(entry.get("topic"), self.events)
            for note in entry.get("notes", []):
                if self.shared.add_note(topic, note, f"consolidated {day}") is not None:
                    written += 1
        known = self.shared.recent_decisions()
        for decision in result.get("decisions", []):
            source = f"from {decision.get('conversation') or 'a conversation'}"
            if self.shared.add_decision(decision["text"], source, known) is not None:
                written += 1
        return written

    # -- progress ------------------------------------------------------------------------
    def _load(self) -> dict[str, Any]:
        try:
            state = json.loads((self.root / STATE).read_text("utf-8"))
        except FileNotFoundError:
            state = {}
        except ValueError:
            log.error("%s is unreadable; starting consolidation afresh", STATE)
            state = {}
        state.setdefault("seen", {})
        state.setdefault("archives", [])
        state.setdefault("last_run", 0)
        return state

    def _save(self, state: dict[str, Any]) -> None:
        _atomic_write(self.root / STATE, json.dumps(state))


# -- pure helpers ------------------------------------------------------------------------
def parse(text: str) -> dict[str, Any]:
    """The model's JSON answer, checked; ConsolidationFailed when it is not usable."""
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start : end + 1]) if start >= 0 else None
    except ValueError as exc:
        raise ConsolidationFailed(f"the model's answer is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConsolidationFailed("the model's answer holds no JSON object")
    topics = [
        {"topic": str(t.get("topic", "")), "notes": [str(n) for n in t.get("notes", []) if n]}
        for t in data.get("topics") or []
        if isinstance(t, dict) and isinstance(t.get("notes", []), list)
    ]
    decisions = [
        {"text": str(d.get("text", "")).strip(), "conversation": str(d.get("conversation", ""))}
        for d in data.get("decisions") or []
        if isinstance(d, dict) and str(d.get("text", "")).strip()
    ]
    return {"topics": topics, "decisions": decisions}


def _topic(raw: Any, events: EventLog) -> str:
    """The model's topic as a file name; one that looks like a path (or is empty) is
    refused, and its notes go to the `general` topic instead of being lost."""
    try:
        return topic_name(str(raw or ""))
    except MemoryRefused as exc:
        events.emit("team.topic_refused", "", topic=str(raw)[:80], reason=str(exc))
        return FALLBACK_TOPIC


def _new_turns(messages: list[dict[str, Any]], seen: set[str]) -> list[tuple[str, str]]:
    """(hash, transcript line) of the turns of a conversation not read before (added
    to `seen`)."""
    out = []
    for message in messages:
        digest = hashlib.sha1(json.dumps(message, sort_keys=True).encode()).hexdigest()[:16]
        if digest in seen:
            continue
        seen.add(digest)
        line = transcript_turn(json.dumps(message), result_chars=300)
        if line.startswith("user: " + _SUMMARY):
            line = ""  # a summary of turns already read (or archived)
        out.append((digest, line))
    return out


def _chunks(
    conversation: str, turns: list[tuple[str, str]], archive: str | None = None
) -> list[Piece]:
    """Turns cut into pieces of at most BATCH_CHARS; the archive is marked read with the
    last piece (an archive with nothing new is one empty piece, to mark it)."""
    pieces: list[Piece] = []
    current = Piece(conversation, "", [])
    for digest, line in turns:
        if current.text and len(current.text) + len(line) > BATCH_CHARS:
            pieces.append(current)
            current = Piece(conversation, "", [])
        current.text += (line[:BATCH_CHARS] + "\n") if line else ""
        current.hashes.append(digest)
    if current.hashes or archive is not None:
        pieces.append(current)
    if archive is not None:
        pieces[-1].archive = archive
    return pieces


def _pack(pieces: list[Piece]) -> list[Batch]:
    """Pieces into batches of at most BATCH_CHARS; pieces with no text (only marks)
    ride along with the batches that have some, or make one of their own."""
    batches: list[Batch] = []
    current = Batch()
    for piece in pieces:
        if current.pieces and current.size + len(piece.text) > BATCH_CHARS:
            batches.append(current)
            current = Batch()
        current.pieces.append(piece)
    if current.pieces:
        batches.append(current)
    return batches


def _advance(state: dict[str, Any], batch: Batch) -> None:
    for piece in batch.pieces:
        seen = state["seen"].setdefault(piece.conversation, [])
        seen.extend(piece.hashes)
        del seen[:-SEEN_PER_CONVERSATION]
        if piece.archive is not None:
            state["archives"].append(piece.archive)


def _slug(key: str) -> str:
    """A conversation key as compaction names its archives (AgentFiles.archive)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-.")[:60] or "conversation"


def _archive_conversation(relative: str) -> str:
    """`agents/<agent>/archive/<slug>-<stamp>.jsonl` -> `<agent>/<slug>`."""
    parts = relative.split("/")
    stem = parts[-1].removesuffix(".jsonl")
    return f"{parts[1]}/{stem.rsplit('-', 1)[0]}"


def _json(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip() and not line.startswith("# "):
            return line.strip()[:100]
    return ""
