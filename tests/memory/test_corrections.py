"""Memory is no back door, and it can be corrected: through a running app and the fake
Anthropic API. What Ann asks to be remembered reaches her own profile and never Bob's
prompt; `update_note` / `forget` change one line of a profile or a team fact; a new
preference of the same kind replaces the old one; a profile edited by hand keeps its
own wording."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from config.settings import Settings
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.kits.app_kit import Recorder, inbound, running_app
from tests.kits.tools_kit import caller


def call(name: str, **args: Any) -> str:
    return f"call {name} {json.dumps(args)}"


def profile(settings: Settings, name: str) -> str:
    return (settings.data_dir / "people" / f"{name}.md").read_text()


async def test_ann_asking_to_remember_lands_in_her_profile_not_in_bobs_prompt(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = lambda call: [text("ok")]  # the model writes nothing itself
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("Remember that the door code is 4711.", sender="ann"))
        await rec.wait_count(1)
        app.human.accept(inbound("hello", sender="bob", conversation="bobs"))
        await rec.wait_count(2)
        app.human.accept(inbound("hi again", sender="ann"))
        await rec.wait_count(3)
    bob_call, ann_again = fake.calls[1], fake.calls[2]
    assert "4711" not in bob_call.system and "4711" not in json.dumps(bob_call.messages)
    assert "4711" in ann_again.context  # Ann's profile, shown when Ann speaks
    assert "door code is 4711" in profile(settings, "ann")
    assert not (settings.data_dir / "people" / "bob.md").exists()


async def test_a_new_preference_of_the_same_kind_replaces_the_old_one(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = lambda call: [text("ok")]
    rec = Recorder()
    said = ["I prefer German.", "I prefer short answers.", "I prefer English."]
    async with running_app(settings, [rec]) as app:
        for n, line in enumerate(said, 1):
            app.human.accept(inbound(line, sender="ann"))
            await rec.wait_count(n)
    text_ = profile(settings, "ann")
    assert "German" not in text_ and "- I prefer English." in text_
    assert "- I prefer short answers." in text_  # another kind stays


async def test_update_note_and_forget_change_one_line_and_keep_hand_edits(
    settings: Settings, fake: FakeAnthropic
) -> None:
    people = settings.data_dir / "people"
    people.mkdir(parents=True)
    hand = (
        "# Ann (edited by hand)\n\nLeads ops. Do NOT page before 08:00!\n\n"
        "## Preferences\n- likes answers in German\n- Works from Lisbon\n\n## My own heading\n"
        "* coffee: black\n"
    )
    (people / "ann.md").write_text(hand)
    team = settings.data_dir / "team" / "knowledge"
    team.mkdir(parents=True)
    (team / "deploys.md").write_text(
        "# deploys\n\n- Deploys happen on Tuesdays.\n- Freeze in Dec.\n"
    )
    fake.responder = caller
    rec = Recorder()
    asks = [
        call("update_note", person="ann", old="works from lisbon", new="Works from Porto"),
        call("forget", topic="deploys", old="freeze in dec"),
        call("update_note", topic="deploys", old="deploys", new="x"),  # the heading too
        call("forget", person="ann", old="nothing like this"),
        call("update_note", old="coffee", new="tea"),  # neither person nor topic
    ]
    async with running_app(settings, [rec]) as app:
        for n, line in enumerate(asks, 1):
            app.human.accept(inbound(line, sender="ann"))
            await rec.wait_count(n)
        app.human.accept(inbound("I prefer answers in English.", sender="ann"))
        await rec.wait_count(len(asks) + 1)
    results = [m.text for m in rec.sent]
    assert results[0].startswith("result: Replaced the line in people/ann.md")
    assert results[1].startswith("result: Removed the line in team/knowledge/deploys.md")
    assert "2 lines of the team fact deploys say 'deploys'" in results[2]
    assert "no line of ann's profile says 'nothing like this'" in results[3]
    assert "- Works from Porto" in results[3]  # what the profile says, to choose from
    assert "give either `person`" in results[4]
    ann = profile(settings, "ann")
    assert ann.startswith("# Ann (edited by hand)\n\nLeads ops. Do NOT page before 08:00!\n")
    assert "- Works from Porto\n" in ann and "Lisbon" not in ann
    assert "## My own heading\n* coffee: black\n" in ann  # hand-made parts stay as written
    assert "German" not in ann and "I prefer answers in English." in ann  # same kind: replaced
    deploys = (team / "deploys.md").read_text()
    assert deploys == "# deploys\n\n- Deploys happen on Tuesdays.\n"


def test_a_profile_that_is_not_utf8_is_never_rewritten(tmp_path: Path) -> None:
    from agents.memory.files import MemoryRefused
    from agents.memory.shared import Shared

    shared = Shared(tmp_path, 100_000, "UTC", 60.0)
    raw = b"# Ann\n- likes caf\xe9\n"
    (tmp_path / "people").mkdir(exist_ok=True)
    (tmp_path / "people" / "ann.md").write_bytes(raw)
    try:
        shared.correct("people/ann.md", "likes", "x", "Ann's profile")
    except MemoryRefused as exc:
        assert "not UTF-8" in str(exc)
    else:
        raise AssertionError("a broken profile was rewritten")
    finally:
        shared.close()
    assert (tmp_path / "people" / "ann.md").read_bytes() == raw
