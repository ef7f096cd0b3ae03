"""Each person sees their own (security review #6, #7): `/switchboard status` and App Home
show a member only her conversations; an API caller is bound to what it started."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.core.trigger_spec import build_spec
from config.settings import SettingsError, load_settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.kits.security_kit import in_channel, managing, refused, schedule
from tests.kits.slack_kit import MENTION, posted, slack_app, slack_settings
from tests.kits.tools_kit import caller, free_port


# -- finding 6: /switchboard status and the App Home -----------------------------------
async def test_h1_status_and_home_show_a_member_only_her_own_conversations(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """Ann's DM holds a worker with a question and a reminder. Mallory's
    `/switchboard status` and Home tab show none of it, only a count; Ann's show it."""
    fake.responder = managing
    spawn = 'call spawn_worker {"name": "Alice", "task": "Review the payroll for the layoffs"}'
    remind = schedule(type="delayed", config={"delay_seconds": 3600},
                      action="Remind Ann: tell Bob on Friday")  # fmt: skip
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        slack.post(remind, user="UANN", channel="DANN", channel_type="im")
        await slack.until(posted("Scheduled trigger"), 20)
        slack.post(spawn, user="UANN", channel="DANN", channel_type="im")
        await slack.until(posted("What is the highest price?"), 20)
        slack.post(f"{MENTION} hello", user="UMAL", channel="CPUBLIC")
        await slack.until(lambda s: len(in_channel(s, "CPUBLIC")) == 1, 20)
        statuses = {user: slack.slash("status", user=user) for user in ("UMAL", "UANN")}
        await slack.until(lambda s: all(e.response for e in statuses.values()), 20)
        for user in ("UMAL", "UANN"):
            slack.open_home(user)
        await slack.until(lambda s: {"UMAL", "UANN"} <= set(s.home_views), 20)
    said = {user: str(e.response) for user, e in statuses.items()}
    homes = {user: json.dumps(view) for user, view in slack.home_views.items()}
    secrets = ("Review the payroll", "What is the highest price", "tell Bob on Friday")
    for words in secrets:
        assert words not in said["UMAL"] and words not in homes["UMAL"]
        assert words in said["UANN"]
    assert (
        "1 worker(s), 1 open question(s), 0 pending approval(s) and 1 trigger(s)" in (said["UMAL"])
    )
    assert "belong to other conversations" in homes["UMAL"]
    assert "Review the payroll" in homes["UANN"] and "What is the highest" in homes["UANN"]


# -- finding 7: an API caller is bound to what it started ------------------------------
CI = "ci:" + "c" * 24


async def api(method: str, url: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {CI.partition(':')[2]}"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, json=body, headers=headers) as response,
    ):
        return response.status, await response.json()


async def test_a1_an_api_caller_neither_joins_a_dm_nor_reads_other_replies_to_its_place(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """The CI token posts into Ann's DM: refused, with an audit line, and nothing is
    taken in. Into the channel listed for it, it is answered, and reads back only that
    conversation's replies, not a reminder another conversation posts there."""
    fake.responder = caller
    port = free_port()
    settings = slack_settings(tmp_path, fake, slack, SWITCHBOARD_HTTP_PORT=str(port),
                              SWITCHBOARD_API_TOKEN=CI,
                              SWITCHBOARD_API_TARGETS="ci:slack:CDEPLOYS")  # fmt: skip
    url = f"http://127.0.0.1:{port}/api/messages"
    async with slack_app(settings) as (app, _):
        status, body = await api("POST", url, {"conversation": "slack:DANN", "text": "hi"})
        assert status == 403 and "SWITCHBOARD_API_TARGETS" in body["error"]
        status, body = await api("POST", url, {"conversation": "slack:CDEPLOYS", "text": "v2"})
        assert status == 202
        await slack.until(lambda s: len(in_channel(s, "CDEPLOYS")) == 1, 20)
        later = {"delay_seconds": 0.1, "action_type": "send_message"}
        board = "Board deck: we sell the company on Monday"
        spec = build_spec("delayed", later, board, "slack:CDEPLOYS")
        app.triggers.create(spec, "coordinator", "slack:DANN", "slack:DANN")
        await slack.until(lambda s: len(in_channel(s, "CDEPLOYS")) == 2, 20)
        status, got = await api("GET", f"{url}/{body['id']}")
    assert status == 200 and [r["text"] for r in got["replies"]] == ["ok"]
    assert "Board deck" in in_channel(slack, "CDEPLOYS")[1]
    assert in_channel(slack, "DANN") == []
    assert [(d["person_id"], d["resource"]) for d in refused(tmp_path, "api_message")] == [
        ("api:ci", "slack:DANN")
    ]


@pytest.mark.parametrize(
    ("targets", "says"),
    [("ci:slack:C1,alerts:terminal", "'alerts' is no caller"), ("ci:irc:#x", "unknown delivery")],
)
def test_a1_the_api_targets_setting_is_checked_at_load(targets: str, says: str) -> None:
    env = {"SWITCHBOARD_API_TOKEN": CI, "SWITCHBOARD_API_TARGETS": targets,
           "ANTHROPIC_API_KEY": "x"}  # fmt: skip
    with pytest.raises(SettingsError, match=f"SWITCHBOARD_API_TARGETS.*{says}"):
        load_settings(None, env)
