"""The scope policy itself (bot/inbox/scope.py), over a real store and people directory, with
an in-memory channel answering membership (the seam Slack and Discord implement; their
wire-level behaviour is in tests/tools/test_scope.py)."""

from __future__ import annotations

from pathlib import Path

from bot.core.events import EventLog
from bot.core.messages import Target
from bot.inbox.people import People
from bot.inbox.scope import FileOwners, Scope
from bot.store.core import Store
from config.entries import PersonConfig


class Members:
    """A channel that knows who is in which channel, and counts the questions."""

    kind = "slack"

    def __init__(self, rooms: dict[str, set[str]]) -> None:
        self.rooms = rooms
        self.asked = 0

    async def can_read(self, user_id: str, target: Target) -> bool | None:
        self.asked += 1
        room = self.rooms.get(target.address)
        return None if room is None else user_id in room

    async def can_post(self, user_id: str, target: Target) -> bool | None:
        return await self.can_read(user_id, target)


HERE = Target("slack", "C1", "1700.1")
CONV = "slack:C1/1700.1"


def make(store: Store, tmp_path: Path, **kw: object) -> tuple[Scope, Members]:
    people = People(
        [
            PersonConfig(name="Ann", slack=["UANN"], email=["ann@example.com"]),
            PersonConfig(name="Bob", slack=["UBOB"], email=["bob@example.com"]),
        ],
        store,
        "UTC",
    )
    people.spoke(CONV, "Ann")
    members = Members({"COPS": {"UANN"}, "CHR": {"UBOB"}})
    channels = {"slack": members, "email": object()}
    scope = Scope(people, FileOwners(store), channels, EventLog(tmp_path / "e.jsonl"), **kw)  # type: ignore[arg-type]
    return scope, members


async def test_open_places_to_send_to(store: Store, tmp_path: Path) -> None:
    scope, _ = make(store, tmp_path, open_targets=["email:Ops@Example.com", "slack:CHOME"])
    ann = scope.asker(CONV)
    assert ann.person == "Ann" and ("slack", "UANN") in ann.ids
    for open_ in [
        "slack:C1/1700.1",  # this conversation
        "slack:C1",  # its channel
        "terminal",  # the local console
        "email:ANN@example.com",  # the asking person
        "email:bob@example.com",  # a [[people]] entry
        "slack:UBOB",  # a [[people]] entry's own id
        "email:ops@example.com",  # SWITCHBOARD_TARGETS, any case
        "slack:CHOME",  # SWITCHBOARD_HOME / [[schedules]] targets are passed the same way
        "slack:COPS",  # a channel Ann can post in (the platform says so)
    ]:
        assert await scope.send(ann, Target.parse(open_), HERE) is None, open_
    for closed in ["email:x@evil.test", "slack:CHR", "slack:CUNKNOWN", "discord:42"]:
        crossing = await scope.send(ann, Target.parse(closed), HERE)
        assert crossing is not None and crossing.resource == closed


async def test_reading_needs_membership_and_a_mail_thread_its_participant(
    store: Store, tmp_path: Path
) -> None:
    scope, members = make(store, tmp_path)
    ann = scope.asker(CONV)
    assert await scope.read(ann, Target.parse("slack:COPS"), HERE) is None
    assert await scope.read(ann, Target.parse("slack:COPS/1.2"), HERE) is None
    assert members.asked == 1  # the thread's channel was answered from the cache
    assert await scope.read(ann, Target.parse("slack:CHR"), HERE) is not None
    assert await scope.read(ann, Target.parse("email:ann@example.com"), HERE) is None
    crossing = await scope.read(ann, Target.parse("email:bob@example.com"), HERE)
    assert crossing is not None and "Ann is not part of email:bob@example.com" in crossing.why
    nobody = scope.asker(None)  # a trigger's own step: nobody asked
    assert await scope.read(nobody, Target.parse("slack:COPS"), None) is not None


async def test_membership_answers_expire(store: Store, tmp_path: Path) -> None:
    scope, members = make(store, tmp_path, ttl=0.0)
    ann = scope.asker(CONV)
    for _ in range(3):
        assert await scope.read(ann, Target.parse("slack:COPS"), HERE) is None
    assert members.asked == 3


def test_files_and_workspaces_belong_to_their_conversation(store: Store, tmp_path: Path) -> None:
    scope, _ = make(store, tmp_path)
    scope.owners.add(CONV, ["files/aaaa/report.csv"])
    scope.owners.add("slack:DANN", ["files/bbbb/payroll.csv"])
    ann = scope.asker(CONV, ["coordinator/slack_C1_1700.1", "workers/alice-1"])
    assert scope.path(ann, "files/aaaa/report.csv") is None
    assert scope.path(ann, "files/aaaa") is None
    assert scope.path(ann, "files/bbbb/payroll.csv") is not None
    assert scope.path(ann, "files/bbbb") is not None
    assert scope.path(ann, "files") is not None
    assert scope.path(ann, "workspaces/workers/alice-1/out.md") is None
    assert scope.path(ann, "workspaces/workers/bob-2/out.md") is not None
    assert scope.path(ann, "report.md") is None  # the agent's own workspace
    assert scope.owners.paths(CONV) == {"files/aaaa/report.csv"}


def test_crossings_are_events_with_the_audit_fields(store: Store, tmp_path: Path) -> None:
    scope, _ = make(store, tmp_path, mode="deny")
    crossing = scope.path(scope.asker(CONV), "files/zzzz/x.csv")
    assert crossing is not None and scope.outcome(approved=False) == "denied"
    scope.crossed("coordinator", scope.asker(CONV), "read_file", crossing, "denied")
    line = (tmp_path / "e.jsonl").read_text()
    fields = [
        '"scope.crossed"',
        '"person": "Ann"',
        '"person_id": "slack:UANN"',
        '"resource": "files/zzzz/x.csv"',
        '"outcome": "denied"',
        f'"conversation": "{CONV}"',
    ]
    assert all(field in line for field in fields), line


async def test_a_listing_of_the_shared_areas_shows_only_the_conversations_own(
    store: Store, tmp_path: Path
) -> None:
    from agents.tools.files import Workspace

    scope, _ = make(store, tmp_path)
    made = ["files/aaaa/report.csv", "files/bbbb/payroll.csv"]
    made += ["workspaces/workers/alice-1/out.md", "workspaces/workers/bob-2/hr.md"]
    for path in made:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x")
    scope.owners.add(CONV, ["files/aaaa/report.csv"])
    ann = scope.asker(CONV, ["coordinator/c1", "workers/alice-1"])
    ws = Workspace(tmp_path, "coordinator/c1", 1000, lambda p: scope.path(ann, p) is None)
    files = await ws.listing({"path": "files"})
    assert "report.csv" in files and "payroll" not in files
    spaces = await ws.listing({"path": "workspaces"})
    assert "alice-1/out.md" in spaces and "hr.md" not in spaces
