"""The coordinator answers for a person when told to: "tell Alice: data center only"
from the person Alice asked answers her open question and she goes on; from anyone
else it reaches her as information and she stays parked (seed audit #27)."""

from __future__ import annotations

from typing import Any

from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.kits.app_kit import Recorder, events, inbound, running_app
from tests.kits.script import TeamScript


class Relaying(TeamScript):
    """Alice asks at the terminal (not in the conversation that started her); told
    "tell Alice: ...", the coordinator messages her."""

    def coordinator(self, call: Call) -> list[dict[str, Any]]:
        last = call.last_text
        if "tell Alice:" in last and not call.tool_results():
            said = last.split("tell Alice:", 1)[1].split("\n", 1)[0].strip()
            return [tool("send_message", to="Alice", content=said)]
        if call.tool_results() and "Sent to" in str(call.tool_results()[-1]):
            return [text(str(call.tool_results()[-1]["content"]))]
        return super().coordinator(call)


async def test_told_by_the_person_she_asked_the_coordinator_answers_alice(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = script = Relaying(via="terminal")
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("please research GPUs", conversation="conv-1"))
        await rec.wait_kind("question")
        app.human.accept(inbound("tell Alice: data center only", conversation="conv-1"))
        await rec.wait_text("Report based on")
        assert [w.status for w in app.store.agents.workers()] == ["done"]
    assert script.answers_seen == ["data center only"]
    said = " ".join(rec.texts("coordinator"))
    assert "it answers Alice's open question for" in said
    assert len(events(settings.data_dir, "worker.resumed")) == 1


async def test_told_by_someone_else_alice_hears_it_and_stays_parked(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = script = Relaying(via="terminal")
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("please research GPUs", conversation="conv-1"))
        await rec.wait_kind("question")
        bob = inbound("tell Alice: consumer GPUs", conversation="conv-1", channel="slack")
        app.human.accept(bob)
        await rec.wait_for(lambda sent: any("Sent to alice." in m.text for m in sent))
        assert [w.status for w in app.store.agents.workers()] == ["parked"]
        assert len(app.human.directory.questions) == 1
    assert script.answers_seen == []
