"""The nightly distillation writes only its own section of MEMORY.md: what people
wrote there, before or during a run, survives (issue 11, item 5)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from agents.memory.maintenance import END, START
from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, text
from tests.kits.app_kit import Recorder, make_settings, running_app

HAND = "# Ann's notes\n\nNever deploy on Fridays.\n"


def log_day(agent: Path, days_ago: int, fact: str) -> None:
    (agent / "memory").mkdir(parents=True, exist_ok=True)
    day = (datetime.now(UTC).date() - timedelta(days=days_ago)).isoformat()
    (agent / f"memory/{day}.md").write_text(f"# {day}\n\n### 09:00:00\n{fact}\n")


async def test_hand_edits_survive_distillation(settings: Settings, fake: FakeAnthropic) -> None:
    agent = settings.data_dir / "agents/coordinator"
    log_day(agent, 2, "Chose Postgres 16")
    (agent / "MEMORY.md").parent.mkdir(parents=True, exist_ok=True)
    (agent / "MEMORY.md").write_text(HAND)
    answers = iter(["## Facts\n- Postgres 16", "## Facts\n- Postgres 16\n- Ann is in ops"])
    prompts: list[str] = []

    def responder(call: Call) -> list[dict]:
        prompts.append(call.last_text)
        return [text(next(answers))]

    fake.responder = responder
    async with running_app(settings, [Recorder()]) as app:
        await app.memory.distil("coordinator")
        first = (agent / "MEMORY.md").read_text()
        assert first == f"{HAND.rstrip()}\n\n{START}\n## Facts\n- Postgres 16\n{END}\n"
        # a person edits above the section, and inside it
        edited = first.replace("Never deploy on Fridays.", "Never deploy on Fridays or Mondays.")
        edited = edited.replace("- Postgres 16\n", "- Postgres 16 (pinned by Ann)\n", 1)
        (agent / "MEMORY.md").write_text(edited)
        log_day(agent, 1, "Ann joined ops")
        result = await app.memory.distil("coordinator")
    final = (agent / "MEMORY.md").read_text()
    assert result.startswith("Distilled 1 daily log(s)")
    assert "Never deploy on Fridays or Mondays." in final  # the edit above
    assert "- Postgres 16 (pinned by Ann)" in final.split(START)[0]  # the edit inside: kept
    assert final.split(START)[1] == "\n## Facts\n- Postgres 16\n- Ann is in ops\n" + END + "\n"
    assert "Never deploy on Fridays or Mondays." in prompts[1]  # context for the model


async def test_distillation_can_be_switched_off(tmp_path: Path, fake: FakeAnthropic) -> None:
    on = make_settings(tmp_path / "data", fake)
    async with running_app(on, [Recorder()]) as app:
        assert app.triggers.scheduler is not None
        assert app.triggers.scheduler.get_job("internal:memory-distil") is not None
    off = make_settings(tmp_path / "data", fake, SWITCHBOARD_MEMORY_DISTIL="false")
    async with running_app(off, [Recorder()]) as app:
        assert app.triggers.scheduler is not None
        assert app.triggers.scheduler.get_job("internal:memory-distil") is None
