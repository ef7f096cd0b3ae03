"""The soak's ledger and fake model (tests/bench/soak_traffic.py): a worker the bot will
not start (its `spawn_worker` answered with an error, e.g. at SWITCHBOARD_MAX_WORKERS)
is answered by the model's relaying that refusal, and the ledger counts it answered,
not lost; a refusal for anything but a worker is a wrong answer."""

from __future__ import annotations

from collections import Counter

from tests.bench.soak_traffic import ANSWER, Ledger, Model
from tests.fakes.anthropic_api import Call


def spawn_refused(name: str, error: bool) -> Call:
    use = {"type": "tool_use", "id": "toolu_1", "name": "spawn_worker",
           "input": {"name": name, "task": "Ask which colour, publish."}}  # fmt: skip
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Error: the limit"}
    messages = [
        {"role": "user", "content": f"<@U0BOT> spawn {name}"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result | ({"is_error": True} if error else {})]},
    ]
    return Call(body={"model": "m", "system": "coordinator", "messages": messages}, headers={})


def said(blocks: list[dict[str, object]]) -> str:
    return " ".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def test_the_fake_model_relays_a_refused_worker_and_only_that() -> None:
    model = Model()
    refused = said(model(spawn_refused("W7", error=True)))
    assert ANSWER.findall(refused) == [("busy", "W7")]
    assert model.refused == ["W7"]
    started = said(model(spawn_refused("W8", error=False)))
    assert ANSWER.findall(started) == []  # the worker runs and answers for itself later
    assert model.refused == ["W7"]


def test_a_refusal_answers_a_worker_once_and_nothing_else() -> None:
    ledger = Ledger()
    for tag, word in (("W1", "done"), ("A2", "done"), ("W3", "done"), ("m4", "ok")):
        ledger.note("kind", tag, word)
    answers = Counter({("busy", "W1"): 1, ("done", "A2"): 1, ("ok", "m4"): 1, ("busy", "m4"): 1})
    once, missing, extra = ledger.check(answers)
    assert once == 3  # W1 by its refusal, A2 by its result, m4
    assert missing == ["W3 (kind)"]
    assert extra == ["busy m4"]
    answers[("done", "W1")] = 1  # refused and also run: twice
    assert ledger.check(answers)[2] == ["W1 x2", "busy m4"]
