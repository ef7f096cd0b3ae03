"""Secrets stay in (security review #15-#17): backups are private, an MCP URL's key and
session id are not logged, a long value leaves its essentials in sight."""

from __future__ import annotations

import io
import logging
import os
import re
import stat
from pathlib import Path

import pytest

from bot.approvals.text import request_text
from bot.core import redact
from bot.store.approvals import ApprovalRow
from bot.store.backup import BackupError, backup, restore
from bot.store.core import Store
from channels.slack.approvals import request_blocks
from channels.slack.format import to_mrkdwn
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, eventually, running_app
from tests.kits.tools_kit import caller, http_entry, http_server, tools_settings


# -- #16: backups are their owner's alone; restore follows no link ------------------------
def _modes(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): stat.S_IMODE(p.lstat().st_mode) for p in [root, *root.rglob("*")]
    }


def test_b1_a_backup_is_0700_and_0600_and_restore_refuses_a_link(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    Store(data / "switchboard.db").close()
    notes = data / "agents" / "coordinator" / "MEMORY.md"
    notes.parent.mkdir(parents=True)
    notes.write_text("the board's plans\n")
    (data / "events.jsonl").write_text('{"type": "x"}\n{"type": "cut')
    outside = tmp_path / "outside.txt"
    outside.write_text("not the bot's\n")
    (data / "link.md").symlink_to(outside)
    (data / "linked-dir").symlink_to(tmp_path, target_is_directory=True)
    old = os.umask(0o022)  # what a shell hands a cron job
    try:
        backup(data, tmp_path / "backups" / "monday")
    finally:
        os.umask(old)
    made = tmp_path / "backups" / "monday"
    modes = _modes(made)
    assert modes.pop(".") == 0o700 and stat.S_IMODE((tmp_path / "backups").stat().st_mode) == 0o700
    assert {m for p, m in modes.items() if (made / p).is_dir()} == {0o700}
    assert {m for p, m in modes.items() if (made / p).is_file()} == {0o600}
    assert "link.md" not in modes and not any(p.startswith("linked-dir") for p in modes)
    assert (made / "events.jsonl").read_text() == '{"type": "x"}\n'
    # a link put into the backup afterwards: restore refuses it and writes nothing
    (made / "agents" / "coordinator" / "hostname.md").symlink_to(outside)
    target = tmp_path / "restored"
    with pytest.raises(
        BackupError, match=r"hostname\.md is a symbolic link: .*nothing was restored"
    ):
        restore(made, target)
    assert not (target / "agents").exists()
    (made / "agents" / "coordinator" / "hostname.md").unlink()
    restore(made, target)
    restored = _modes(target)
    assert restored["agents/coordinator/MEMORY.md"] == 0o600 and restored["."] == 0o700
    assert (target / "agents" / "coordinator" / "MEMORY.md").read_text() == "the board's plans\n"


# -- #17: a key in an MCP URL's path and the MCP session id stay out of the log ----------
PATH_KEY = "sk_live_SECRETINPATH789"


async def test_l1_a_key_in_an_mcp_path_and_the_session_id_are_not_logged(
    tmp_path: Path, fake: FakeAnthropic, calls_file_path: Path
) -> None:
    fake.responder = caller
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    root = logging.getLogger()
    level = root.level
    with http_server(calls_file_path) as server:
        entries = [http_entry("ops", server.url), http_entry("keyed", f"{server.url}/{PATH_KEY}")]
        settings = tools_settings(tmp_path, fake, entries)
        handler.addFilter(redact.Redactor(redact.configured_secrets(settings)))
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        try:
            async with running_app(settings, [Recorder()]) as app:
                await app.mcp.clients["ops"].connected.wait()
                await eventually(lambda: "/mcp/[redacted]" in out.getvalue(), 30)
        finally:
            root.removeHandler(handler)
            root.setLevel(level)
    logged = out.getvalue()
    assert "Received session ID: [redacted]" in logged  # the line is kept, its value not
    assert not re.search(r"session ID: (?!\[redacted\])", logged)
    assert PATH_KEY not in logged and "SECRETINPATH" not in logged
    assert "/mcp/[redacted]" in logged  # the request is still there, its key masked
    line = "mcp POST /mcp headers {'mcp-session-id': '6d1f0c2e9a'}, /v1/mcp ok"
    assert redact.Redactor().redact(line) == (
        "mcp POST /mcp headers {'mcp-session-id': '[redacted]'}, /v1/mcp ok"
    )


# -- #14: a long address cannot push the request out of sight ----------------------------
def test_r1_a_3000_character_address_leaves_the_essentials_in_the_slack_section() -> None:
    place = "email:" + "x" * 3_000 + "@evil.test"
    row = ApprovalRow(
        id="a1", agent="coordinator", conversation="slack:C1/1", speaker="coordinator",
        tool="schedule", tool_use_id="t1", target="slack:C1/1",
        args={"type": "delayed", "config": {"delay_seconds": 60},
              "action": "mail the board minutes", "deliver_to": place},
        held={"scope": place, "why": f"{place} is not a place open to Ann (slack:U0ANN)"},
        requester="Ann", requester_id="slack:U0ANN",
    )  # fmt: skip
    text = request_text(row)
    section = request_blocks(to_mrkdwn(text), row.id)[0]["text"]["text"]
    assert len(text) < 2_000  # a Discord post too
    assert section.startswith("Outside this conversation: ")
    assert section.split("\n", 1)[0].count("evil.test") == 2  # the domain, in both mentions
    assert "3,016 characters: in full in the arguments" in section
    assert "wants to run schedule" in section and "Reply `approve` or `deny" in section
    assert '"action": "mail the board minutes"' in section
