"""Words that agree: `/help` is answered by the runtime (no model call), the answer to
`new` and the status lines name no tools."""

from __future__ import annotations

from pathlib import Path

from bot.core.notices import HELP, doing, fresh_start
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.kits.proc import run_command


def test_help_is_answered_without_the_model(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.responder = lambda call: [text("the model answered")]
    done = run_command(
        ["chat", "--data-dir", str(tmp_path / "data")], fake.env(), tmp_path, input="/help\n"
    )
    assert done.returncode == 0, done.stderr
    assert f"[switchboard] {HELP}" in done.stdout
    assert fake.calls == []


def test_what_people_read_names_no_tool() -> None:
    tools = ("spawn_worker", "publish", "memory_search", "send_message", "ask_human")
    said = [fresh_start(True, ["Alice"]), fresh_start(False, []), HELP]
    said += [doing(tool, {"name": "Alice", "to": "Alice"}) for tool in tools]
    said += [doing("some_new_tool", {})]
    for line in said:
        assert not any(tool in line for tool in (*tools, "some_new_tool")), line
    assert doing("spawn_worker", {"name": "Alice"}) == "Starting Alice"
    assert doing("ops__restart_service", {}) == "Using ops: restart service"


def test_status_names_a_worker_as_it_was_given(tmp_path: Path) -> None:
    from bot.ledger.report import full_status
    from bot.store.core import Store
    from bot.store.schema import QuestionRow, WorkerRow

    store = Store(tmp_path / "switchboard.db")
    try:
        store.agents.upsert_worker(
            WorkerRow("alice", "Alice", "research chips", "parked", None, None)
        )
        store.agents.add_question(QuestionRow("q1", "alice", "Which GPUs?", "terminal",
                                              "terminal", [], "open", 0.0))  # fmt: skip
        text = full_status(store)
    finally:
        store.close()
    questions = text.split("Open questions", 1)[1].splitlines()[3]
    assert " Alice " in f" {questions} " and "alice" not in questions


def test_status_says_why_the_model_cannot_be_used(tmp_path: Path) -> None:
    import json
    import os

    from bot.ledger.report import full_status
    from bot.store.core import Store

    store = Store(tmp_path / "switchboard.db")
    try:
        beat = {"pid": os.getpid(), "node": "n1", "started_at": store.now() - 60,
                "beat": store.now(), "llm_in_flight": 0, "llm_waiting": 0, "sessions": 1,
                "model_down": "ANTHROPIC_API_KEY was refused by https://api.anthropic.com "
                "(invalid x-api-key)"}  # fmt: skip
        store.set_kv("runtime", json.dumps(beat))  # as bot/app.py beats
        text = full_status(store)
    finally:
        store.close()
    assert text.splitlines()[1] == (
        "The model cannot be used: ANTHROPIC_API_KEY was refused by "
        "https://api.anthropic.com (invalid x-api-key)"
    )
