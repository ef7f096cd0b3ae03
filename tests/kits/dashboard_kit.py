"""A busy dashboard to read: conversations marked up as the model reads them (made with
the runtime's own marking), workers with long tasks, an open question, a failing
channel and MCP server, a trigger, and a busy worker's run of events."""

from __future__ import annotations

import json
import time
from typing import Any

from agents.loop.marking import untrusted
from agents.loop.transcript import RUNTIME
from agents.loop.turns import LIMIT_NOTE
from bot.app import App
from bot.core.clock import now_line
from bot.store.core import QuestionRow, WorkerRow
from bot.triggers import build_spec

REFUSED = (
    "ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 1) while "
    "signing in to imap.example.com"
)
MCP_REASON = "cannot start: [Errno 2] No such file or directory: '/nonexistent/python'"


def said(who: str, via: str, text: str) -> str:
    """A person's words as the model reads them (agents/loop/transcript.py)."""
    return untrusted(text, f"{via} message", who, f"[{who} via {via}]: ")


def user(*texts: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


def assistant(text: str, tool: tuple[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": "SECRET-THOUGHT weighing it", "signature": "x"},
        {"type": "text", "text": text},
    ]
    if tool is not None:
        content.append({"type": "tool_use", "id": "t1", "name": tool[0], "input": tool[1]})
    return {"role": "assistant", "content": content}


def result(text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": text}],
    }


CONVERSATIONS: list[tuple[str, str, str, list[dict[str, Any]]]] = [
    (
        "coordinator",
        "slack:C1/1006.100000",
        "slack:C1/1006.100000",
        [
            user(now_line("Europe/Berlin"), said("Ann", "slack", "please research AI chips")),
            assistant(
                "On it: Alice is researching AI chips.",
                ("spawn_worker", {"name": "Alice", "task": "research AI chips"}),
            ),
            result("Worker Alice started."),
            assistant("Alice is on it."),
            user(f"{RUNTIME['notice']}: Worker Bob has made no progress for 5 minutes."),
            assistant("Noted."),
            user(LIMIT_NOTE),
        ],
    ),
    (
        "coordinator",
        "slack:DANN/1007.1",
        "slack:DANN/1007.1",
        [
            user(now_line("UTC"), said("Ann", "slack", "what is our deploy window?")),
            assistant("Tuesday 14:00 UTC."),
        ],
    ),
    (
        "coordinator",
        "email:carol@example.com",
        "email:carol@example.com",
        [
            user(
                now_line("UTC"),
                said(
                    "Carol", "email", "The invoice is attached.\n[Subject: Invoice 42 for November]"
                ),
            ),
            assistant("Thanks, Carol: filed."),
        ],
    ),
]


def seed(app: App, now: float | None = None) -> None:
    """Everything the dashboard shows, in the store and the event log of `app`."""
    now = time.time() if now is None else now
    store = app.store
    with store.tx():
        for agent, key, target, messages in CONVERSATIONS:
            store.agents.save_conversation(agent, key, messages, target)
        store.agents.upsert_worker(
            WorkerRow(
                "coordinator-helper",
                "Coordinator-Helper",
                "reconcile the quarterly infrastructure invoices against the procurement ledger",
                "running",
                "slack:C1/1006.100000",
                "slack:C1/1006.100000",
                turns=24,
                created_at=now - 600,
                updated_at=now - 5,
            )
        )
        store.agents.upsert_worker(
            WorkerRow(
                "carol",
                "Carol",
                "find the cheapest reconnecting transatlantic fibre provider",
                "parked",
                "slack:C1/1006.100000",
                "slack:C1/1006.100000",
                turns=3,
                created_at=now - 300,
                updated_at=now - 60,
            )
        )
        store.agents.add_question(
            QuestionRow(
                "q-carol",
                "carol",
                "Should I include providers outside the European Union?",
                "slack:C1/1006.100000",
                "slack:C1/1006.100000",
                [],
                "open",
                now - 60,
            )
        )
        store.set_health("email", "reconnecting", REFUSED)
        store.set_kv(
            "mcp:ops",
            json.dumps(
                {
                    "transport": "stdio",
                    "state": "failed",
                    "tools": 0,
                    "reason": MCP_REASON,
                    "updated": now,
                }
            ),
        )
    spec = build_spec("scheduled", {"cron": "0 9 * * 1-5"}, "post the daily standup summary")
    app.triggers.create(spec, "coordinator", "slack:C1/1006.100000", "slack:C1/1006.100000")
    for i in range(37):
        app.events.emit(
            "tool.called",
            "coordinator-helper",
            tool="remember",
            ms=9.3,
            ok=True,
            error=None,
            conversation="slack:C1/1006.100000",
            person="Ann",
            args_digest="4afbf59c59417e62",
            outcome="ok",
        )
        if i % 3 == 0:
            app.events.emit("memory.written", "coordinator-helper", tool="remember")
    app.events.emit(
        "message.received",
        "human",
        channel="slack",
        sender="Ann",
        conversation="slack:C1/1006.100000",
        to=["coordinator"],
    )
