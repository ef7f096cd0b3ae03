"""`switchboard status`: what runs, what waits, what is due — read from the data dir.

Works whether or not the bot runs: it reads the SQLite database (read-only) and the
runtime beat the live process writes every few seconds. Other parts of the runtime
contribute sections; `bot/ledger/report.py` names them all.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from bot.core.readout import ago, table, when
from bot.inbox.intake import FETCHING
from bot.store.core import ACTIVE_WORKER_STATES, Store, StoreError

STALE_AFTER = 10.0
Section = Callable[[Store], str]


def _beat(store: Store) -> dict[str, Any]:
    raw = store.get_kv("runtime")
    return json.loads(raw) if raw else {}


def runtime_live(store: Store) -> bool:
    """Whether the live process beat recently: what it wrote about live connections
    (MCP servers, channels) is current only then."""
    beat = _beat(store)
    return bool(beat.get("pid")) and store.now() - beat.get("beat", 0) < STALE_AFTER


def _leader(store: Store, this_node: Callable[[str], bool] | None) -> str:
    """`leader: <id> (this node), since <when>`: the lease's holder on PostgreSQL, the
    running process on SQLite."""
    leader = store.leader()
    node, since = leader.node, leader.since
    if not store.postgres and runtime_live(store):
        beat = _beat(store)
        node, since = beat.get("node") or f"pid {beat['pid']}", beat.get("started_at")
    if node is None:
        return "leader: none (no node runs the agents)"
    mine = " (this node)" if this_node is not None and this_node(node) else ""
    return f"leader: {node}{mine}" + (f", since {when(since)}" if since else "")


def _runtime(store: Store) -> str:
    beat = _beat(store)
    if runtime_live(store):
        down = beat.get("model_down")
        return (
            f"Switchboard: running (pid {beat['pid']}, up {ago(beat['started_at'])[:-4]}), "
            f"LLM calls in flight {beat['llm_in_flight']}, waiting for a slot "
            f"{beat['llm_waiting']}, conversations being answered {beat['sessions']}"
        ) + (f"\nThe model cannot be used: {down}" if down else "")
    return "Switchboard: not running" + (
        f" (last seen {ago(beat['beat'], store.now())})" if beat.get("beat") else ""
    )


def _agents(store: Store) -> str:
    state = "live" if runtime_live(store) else "not running"
    rows: list[list[object]] = [["coordinator", "coordinator", state, "-", "-", "-"]]
    for w in store.agents.workers():
        if w.status in ACTIVE_WORKER_STATES or time.time() - w.updated_at < 86400:
            rows.append([w.name, "worker", w.status, w.turns, ago(w.updated_at), w.task])
    return "Agents\n" + table(["name", "kind", "state", "turns", "active", "task"], rows)


def _questions(store: Store) -> str:
    named = {w.id: w.name for w in store.agents.workers()}  # the name as given: Alice, not alice
    rows = [
        [q.id, named.get(q.worker, q.worker), q.target, ago(q.asked_at), q.question]
        for q in store.agents.open_questions()
    ]
    if not rows:
        return "Open questions: none"
    return "Open questions\n" + table(["id", "worker", "asked in", "asked", "question"], rows)


def _channels(store: Store) -> str:
    health = store.health()
    rows = [[c, s, d, ago(t)] for c, s, d, t in health]
    if not rows:
        return "Channels: none has run yet"
    # what is wrong is said whole (a cell is cut at 60 characters): a person acts on it
    wrong = [f"{c}: {d}" for c, s, d, _ in health if s != "connected" and len(d) > 60]
    return "\n".join(["Channels", table(["channel", "state", "detail", "updated"], rows), *wrong])


def _fetching(store: Store) -> str | None:
    """Messages journaled but held until their files are downloaded (bot/inbox/intake.py)."""
    held = [msg for _, msg in store.inbound_by_status(FETCHING)]
    if not held:
        return None
    files = sum(1 for msg in held for a in msg.attachments if a.pending)
    oldest = min(msg.received_at for msg in held)
    return (
        f"Waiting for file downloads: {len(held)} message(s), {files} file(s) still to "
        f"fetch, the oldest received {ago(oldest)}"
    )


def _outbox(store: Store) -> str:
    counts = store.outbox.outbox_counts()
    return "Outbox: " + ", ".join(f"{counts.get(k, 0)} {k}" for k in ("pending", "sent", "failed"))


def render_status(
    store: Store, sections: Sequence[Section] = (), this_node: Callable[[str], bool] | None = None
) -> str:
    """`this_node(id)`: whether a node id is the one `switchboard status` runs on."""
    parts = [_runtime(store) + "\n" + _leader(store, this_node), _agents(store), _questions(store)]
    for section in sections:
        try:
            parts.append(section(store))
        except StoreError as exc:
            parts.append(f"({section.__name__}: unreadable: {exc})")
    parts += [_channels(store), *filter(None, [_fetching(store)]), _outbox(store)]
    return "\n\n".join(parts)
