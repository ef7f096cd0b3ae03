"""Workspaces and the file tools: paths never leave them, sizes are capped, a worker's
files travel with its result, and a worker started again under the same name starts in
an empty workspace."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from agents.tools.files import Workspace
from agents.tools.toolbox import ToolError
from bot.app import App
from bot.channel_context import ChannelContext
from channels.terminal import TerminalChannel
from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.kits.app_kit import Recorder, eventually, inbound, running_app
from tests.kits.script import ReportScript

TRAVERSALS = ["../secret.txt", "/etc/passwd", "a/../../b", "~/x", "", "link/out.txt"]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    data = tmp_path / "data"
    (tmp_path / "secret.txt").write_text("outside")
    space = Workspace(data, "workers/alice-1", 1000)
    space.root.mkdir(parents=True)
    os.symlink(tmp_path, space.root / "link")
    return space


@pytest.mark.parametrize("path", TRAVERSALS)
async def test_every_file_tool_refuses_a_path_out(ws: Workspace, path: str) -> None:
    for call in (
        ws.write({"path": path, "content": "x"}),
        ws.read({"path": path}),
        ws.listing({"path": path or "/"}),
    ):
        with pytest.raises(ToolError):
            await call
    with pytest.raises(ToolError):
        ws.attachments([path])
    assert (ws.data_dir.parent / "secret.txt").read_text() == "outside"


async def test_the_tools_write_read_list_within_limits(ws: Workspace) -> None:
    assert "workspaces/workers/alice-1/notes/a.md" in await ws.write(
        {"path": "notes/a.md", "content": "\n".join(f"line {i}" for i in range(1, 11))}
    )
    page = await ws.read({"path": "notes/a.md", "offset": 3, "limit": 2})
    assert page.endswith("line 3\nline 4\n</untrusted>") and "offset=5" in page
    assert "notes/a.md" in await ws.listing({})
    with pytest.raises(ToolError, match="SWITCHBOARD_FILE_MAX_BYTES"):
        await ws.write({"path": "big.txt", "content": "x" * 2000})
    with pytest.raises(ToolError, match="read-only"):
        await ws.write({"path": "files/x.txt", "content": "x"})
    (ws.root / "blob.bin").write_bytes(b"\x00\x01binary")
    with pytest.raises(ToolError, match="binary"):
        await ws.read({"path": "blob.bin"})
    with pytest.raises(ToolError, match="no file"):
        await ws.read({"path": "missing.md"})


async def test_a_file_a_person_sent_is_read_by_its_files_path(ws: Workspace) -> None:
    sent = ws.data_dir / "files" / "0123" / "app.log"
    sent.parent.mkdir(parents=True)
    sent.write_text("ERROR boom\n")
    assert "ERROR boom" in await ws.read({"path": "files/0123/app.log"})
    with pytest.raises(ToolError):
        await ws.read({"path": "files/../secret.txt"})


async def test_a_workers_report_goes_out_with_its_result(
    settings: Settings, fake: FakeAnthropic
) -> None:
    script = ReportScript()
    fake.responder = script
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("write the weekly report please"))
        await rec.wait_text("The report is ready.")
        files = next(m for m in rec.sent if m.attachments)
        assert files.agent == "Writer" and files.target == inbound("x").reply_to
        (att,) = files.attachments
        assert att.name == "report.md" and att.path.startswith("workspaces/workers/writer-")
        assert (settings.data_dir / att.path).read_text() == script.report


async def test_a_worker_started_again_by_name_gets_a_fresh_workspace(
    settings: Settings, fake: FakeAnthropic
) -> None:
    listings: list[str] = []

    def responder(call: Call) -> list[dict]:
        last = call.last_text
        if call.agent == "coordinator":
            if "published" in last or call.tool_results():
                return [text("ok")]
            return [tool("spawn_worker", name="Ann", task=last)]
        if len(call.messages) == 1:
            return [tool("list_files")]
        if "Wrote" in last:
            return [tool("publish", result="done")]
        if "workspaces/" in last:  # what list_files showed
            listings.append(last)
            if "first" in call.all_text:
                return [tool("write_file", path="notes.md", content="private")]
            return [tool("publish", result="done")]
        return [text("done")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("first task", conversation="c1"))
        await eventually(lambda: len(listings) == 1 and not app.team.workers)
        app.human.accept(inbound("second task", conversation="c2"))
        await eventually(lambda: len(listings) == 2 and not app.team.workers)
    assert all("holds no files" in entry for entry in listings), listings


async def test_the_terminal_shows_where_an_attached_file_is(
    settings: Settings, fake: FakeAnthropic
) -> None:
    """`switchboard chat` cannot upload anything: it prints the saved file's full path."""
    script = ReportScript()
    fake.responder = script
    out = io.StringIO()

    def terminal(app: App) -> None:
        stdin = io.StringIO("write the weekly report\n")
        app.add_channel(TerminalChannel(ChannelContext(app.human), settings, stdin, out))

    async with running_app(settings, [], [terminal]):
        await eventually(lambda: "The report is ready." in out.getvalue())
    line = next(x for x in out.getvalue().splitlines() if x.strip().startswith("file:"))
    assert _absolute_file_text(line.split("file:", 1)[1].strip()) == script.report


def _absolute_file_text(raw: str) -> str:
    path = Path(raw)
    assert path.is_absolute()
    return path.read_text()
