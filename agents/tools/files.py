"""Workspaces and the file tools: `write_file`, `read_file`, `list_files`.

Each coordinator conversation and each worker task has its own directory,
`<data_dir>/workspaces/<workspace>` (AgentInfo.workspace: `coordinator/<conversation>`,
`workers/<name>-<task start>`, so a worker started again under the same name starts
in an empty workspace). A plain relative path is in the agent's own workspace. Two
shared areas can be read (never written) by their data-dir path: `files/...` (what
people sent, as the message names it) and `workspaces/...` (another workspace, when
someone gave the agent that path). Paths are checked like memory paths: no `..`, no
absolute path, no symlink out; sizes are capped; every refusal is a `ToolError`
whose text tells the model what to do instead. Which shared files belong to the
agent's conversation is the scope's question (bot/inbox/scope.py, agents/tools/scope_guard.py):
a listing of a shared area shows only those (`visible`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.loop.marking import untrusted
from agents.loop.step import Step
from agents.services import AgentInfo, Services, ToolFactory
from agents.tools.toolbox import INT, STR, Tool, ToolError, ToolSpec, arg, schema
from bot.core.messages import Attachment
from bot.inbox.files import FILES_DIR, guess_type, human_size, safe_name, write_atomic

WORKSPACES_DIR = "workspaces"
SHARED = (FILES_DIR, WORKSPACES_DIR)
READ_LINES = 400
READ_MAX_CHARS = 40_000
LIST_MAX = 200
FILES_ARG = arg({"type": "array", "items": STR, "maxItems": 20}, "workspace files to attach")
#: whether a shared file (its data-dir path) belongs to an agent's conversation
Visible = Callable[[AgentInfo, str], bool]

WRITE_FILE = ToolSpec(
    "write_file",
    "Write a text file in your workspace (created or replaced); returns its path, to pass "
    "on or attach with `files`. A short answer belongs in your reply.",
    schema(
        {
            "path": arg(STR, "in your workspace: report.md, data/x.csv"),
            "content": arg(STR, "the whole text"),
        }
    ),
)
READ_FILE = ToolSpec(
    "read_file",
    "Read a text file a page of lines at a time: yours, one a person sent (files/...) or "
    "another workspace's (workspaces/...).",
    schema(
        {"path": arg(STR, "workspace-relative, files/... or workspaces/...")},
        {
            "offset": arg(INT, "first line, 1-based", minimum=1),
            "limit": arg(INT, f"lines (default {READ_LINES})", minimum=1),
        },
    ),
)
LIST_FILES = ToolSpec(
    "list_files",
    "List files with their sizes: your workspace, or a folder of files/... or workspaces/...",
    schema({}, {"path": arg(STR, "a folder (default: your whole workspace)")}),
)


def workspace_for(kind: str, key: str) -> str:
    """The workspace name of a coordinator conversation or a worker task."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", key).strip("._") or "default"
    return f"{kind}/{slug[:120]}"


class Workspace:
    """One agent's workspace and the data dir's shared areas it may read."""

    def __init__(
        self,
        data_dir: Path,
        name: str,
        max_bytes: int,
        visible: Callable[[str], bool] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.name = name
        self.root = data_dir / WORKSPACES_DIR / name
        self.max_bytes = max_bytes
        self.visible = visible or (lambda shown: True)

    def resolve(self, raw: str, write: bool = False) -> tuple[Path, str]:
        """(absolute path, data-dir path) of `raw`, refusing anything outside."""
        text = raw.strip()
        rel = Path(text)
        if not text or text in (".", "./"):
            raise ToolError("the path is empty; give a file name like report.md")
        if rel.is_absolute() or text.startswith("~"):
            raise ToolError(f"{raw!r} is absolute; use a path relative to your workspace")
        if ".." in rel.parts:
            raise ToolError(f"{raw!r} climbs out with '..'; use a path inside your workspace")
        shared = rel.parts[0] in SHARED
        if shared and write:
            raise ToolError(
                f"{raw!r} is in a shared area ({'/'.join(SHARED)}), which is read-only; "
                "write in your workspace with a plain relative path like report.md"
            )
        base = self.data_dir / rel.parts[0] if shared else self.root
        path = self.data_dir / rel if shared else self.root / rel
        base.mkdir(parents=True, exist_ok=True)
        if not path.resolve().is_relative_to(base.resolve()):
            raise ToolError(f"{raw!r} leads outside the workspace (a symlink?)")
        return path, path.relative_to(self.data_dir).as_posix()

    # -- the tools -------------------------------------------------------------------
    async def write(self, args: dict[str, Any]) -> str:
        path, shown = self.resolve(args["path"], write=True)
        data = args["content"].encode("utf-8")
        if len(data) > self.max_bytes:
            raise ToolError(
                f"content is {human_size(len(data))}, over the limit of "
                f"{human_size(self.max_bytes)} (SWITCHBOARD_FILE_MAX_BYTES); split it"
            )
        if path.is_dir():
            raise ToolError(f"{args['path']!r} is a folder; name a file inside it")
        write_atomic(path, data)
        return f"Wrote {human_size(len(data))} to {shown}."

    async def read(self, args: dict[str, Any]) -> str:
        path, shown = self.resolve(args["path"])
        data = self._bytes(path, args["path"])
        if b"\x00" in data[:65536]:
            kind = guess_type(path.name)
            raise ToolError(
                f"{shown} is a binary file ({kind}, {human_size(len(data))}); "
                "read_file reads text only"
            )
        lines = data.decode("utf-8", errors="replace").splitlines()
        start = int(args.get("offset") or 1)
        count = int(args.get("limit") or READ_LINES)
        chunk = _cap(lines[start - 1 : start - 1 + count])
        end = start - 1 + len(chunk)
        if not lines:
            return f"{shown} is empty."
        if start > len(lines):
            raise ToolError(f"{shown} has {len(lines)} lines; offset {start} is past its end")
        head = f"{shown}, lines {start}-{end} of {len(lines)}"
        more = f"; read on with offset={end + 1}" if end < len(lines) else ""
        return f"[{head}{more}]\n" + untrusted("\n".join(chunk), f"file {shown}")

    async def listing(self, args: dict[str, Any]) -> str:
        if args.get("path"):
            path, shown = self.resolve(args["path"])
        else:
            path, shown = self.root, f"{WORKSPACES_DIR}/{self.name}"
            path.mkdir(parents=True, exist_ok=True)
        if not path.is_dir():
            raise ToolError(f"{shown} is not a folder")
        entries = sorted(p for p in path.rglob("*") if self._listed(p))
        if not entries:
            return f"{shown} holds no files."
        lines = [
            f"- {p.relative_to(path).as_posix()} ({human_size(p.stat().st_size)})"
            for p in entries[:LIST_MAX]
        ]
        if len(entries) > LIST_MAX:
            lines.append(f"... and {len(entries) - LIST_MAX} more")
        return f"{shown}:\n" + "\n".join(lines)

    def _listed(self, path: Path) -> bool:
        if not path.is_file() or path.name.startswith("."):
            return False
        shown = path.relative_to(self.data_dir).as_posix()
        return not shown.startswith(SHARED) or self.visible(shown)

    def _bytes(self, path: Path, raw: str) -> bytes:
        if not path.is_file():
            raise ToolError(f"there is no file {raw!r}; list_files shows what there is")
        size = path.stat().st_size
        if size > self.max_bytes:
            raise ToolError(f"{raw!r} is {human_size(size)}, too large to read")
        return path.read_bytes()

    # -- attaching ---------------------------------------------------------------------
    def attachments(self, paths: list[str]) -> list[Attachment]:
        """The files named in a `files` argument, checked, as attachments."""
        out = []
        for raw in paths:
            path, shown = self.resolve(raw)
            if not path.is_file():
                raise ToolError(f"cannot attach {raw!r}: there is no such file (list_files)")
            size = path.stat().st_size
            name = safe_name(path.name)
            out.append(Attachment(name, guess_type(name), size, path=shown))
        return out


def _cap(lines: list[str]) -> list[str]:
    out: list[str] = []
    total = 0
    for line in lines:
        total += len(line) + 1
        if total > READ_MAX_CHARS and out:
            break
        out.append(line[:READ_MAX_CHARS])
    return out


def workspace_of(
    data_dir: Path, info: AgentInfo, max_bytes: int, visible: Visible | None = None
) -> Workspace:
    name = info.workspace or workspace_for(info.kind, info.conversation or info.agent_id)
    shown = (lambda path: visible(info, path)) if visible is not None else None
    return Workspace(data_dir, name, max_bytes, shown)


def step_workspace(services: Services, step: Step) -> Workspace:
    """The workspace of the agent running `step` (its files are attached from there)."""
    name = step.workspace or workspace_for("agents", step.speaker_id)
    return Workspace(services.data_dir, name, services.limits.file_max_bytes)


def file_tools(data_dir: Path, max_bytes: int, visible: Visible | None = None) -> ToolFactory:
    """The tool factory the app installs: the three file tools, in each agent's workspace;
    `visible` says which shared files a listing shows (None: all)."""

    def tools(info: AgentInfo) -> list[Tool]:
        ws = workspace_of(data_dir, info, max_bytes, visible)
        return [Tool(WRITE_FILE, ws.write), Tool(READ_FILE, ws.read), Tool(LIST_FILES, ws.listing)]

    return tools
