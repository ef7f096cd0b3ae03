"""The bot's CPU per routed message, piece by piece (issue 33: a month of traffic needs it
lower): each cut measured alone, in CPU time, on the tree it runs from.

    .venv/bin/python tests/bench/bench_cpu.py [--part turn|context|check|mrkdwn|all]
    .venv/bin/python tests/bench/bench_cpu.py --against /path/to/other/tree [--runs 3]

Parts (each prints CPU per unit, the median of its rounds):
- `turn`: coordinator turns through the app (tests/kits/app_kit.py) against the fake
  model, a new conversation for every fifth message (the soak starts threads as often),
  every fourth turn a tool call first; the bot's CPU only: the process's minus the fake
  model's thread (its server, its checks of each request).
- `sql`: the same turns, counting the SQL statements the store runs per routed message.
- `pages`: the same turns, the WAL pages the store writes per routed message (SQLite
  writes every page a commit touched whole: the cost of a message on a slow disk, "A
  slow disk" in docs/running-for-months.md); checkpoints off while it counts, so the
  WAL's growth is what the commits wrote.
- `context`: the memory a turn adds (`Memory.context`: profile, team news, memory
  written since), with a profile, decisions of today and a day's log to read.
- `check`: a tool call's argument check (agents/tools/toolbox.py `_check`) on the
  coordinator's own tool schemas.
- `mrkdwn`: an answer converted for Slack (channels/slack/format.py `to_mrkdwn`).
- `capture`: what a heard line adds to memory (agents/memory/capture.py `captures`).
- `soul`: a new conversation's system prompt (agents/loop/prompts.py `build`).
- `prune`: the pruner's scan for orphaned key/value rows (bot/store/prune_kv.py
  `_orphans`, once a run) among 3,000 live conversations, each with its prompt snapshot
  (~10 KB).
- `log`: the line the model SDK's HTTP client logs per model call, as `switchboard run`
  sets up logging (to a file, secrets redacted).
- `call`: one streamed model call through the Anthropic provider's backend
  (agents/model/providers/anthropic.py) against the fake model: 18 tools, 13 messages, a
  thinking block and a few sentences back; the calling thread's CPU (the fake's not).

`--against TREE` runs every part in TREE (another checkout: main before a change) and
in this one, alternating, `--runs` times each (the machine is shared: single figures
vary), each run in a process of its own so neither warms the other's caches.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

TREE = Path(os.environ.get("BENCH_TREE") or Path(__file__).resolve().parents[2])
sys.path.insert(0, str(TREE))

PARTS = ("turn", "sql", "pages", "context", "check", "mrkdwn", "capture", "soul", "log",
         "prune", "call")  # fmt: skip


def scratch() -> Path:
    """A folder for one part's data, removed when the bench exits."""
    folder = tempfile.mkdtemp(prefix="bench-cpu-")
    atexit.register(shutil.rmtree, folder, True)
    return Path(folder)


def cpu_of(thread: Any) -> float:
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def rounds(what: str, unit: str, once: Callable[[], None], count: int, n: int = 5,
           clock: Callable[[], float] = time.process_time) -> None:  # fmt: skip
    """`once` run `count` times per round, `n` rounds: the median CPU per call (by
    `clock`: the process's, or `time.thread_time` for the calling thread's alone)."""
    once()  # the first call builds what later ones reuse
    spent = []
    for _ in range(n):
        start = clock()
        for _ in range(count):
            once()
        spent.append((clock() - start) / count)
    print(f"{what}: {statistics.median(spent) * 1e6:.1f} us CPU per {unit}")


def bench_check() -> None:
    from agents.team.coordinator import LIST_WORKERS, SPAWN_WORKER, STOP_WORKER
    from agents.tools.toolbox import Tool, Toolbox

    async def nothing(args: dict[str, Any]) -> str:
        return ""

    box = Toolbox([Tool(spec, nothing) for spec in (SPAWN_WORKER, LIST_WORKERS, STOP_WORKER)])
    calls = [
        ("spawn_worker", {"name": "deploy", "task": "Restart api, then publish."}),
        ("list_workers", {}),
        ("stop_worker", {"name": "deploy"}),
        ("spawn_worker", {"name": 3}),  # refused: what the model is told
    ]
    loop = asyncio.new_event_loop()

    async def four() -> None:
        for name, args in calls:
            await box.call(name, args)

    rounds("tool calls through the toolbox (their check), 4 calls", "4 calls",
           lambda: loop.run_until_complete(four()), 300)  # fmt: skip
    loop.close()


def bench_mrkdwn() -> None:
    from channels.slack.format import to_mrkdwn

    answers = [
        "ok t1234",
        "Done: **api** restarted on `ci-3`; see <https://ci.example/1|the log>.",
        "# Deploy\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n\n> a quote\n\n"
        "```sh\nmake ship\n```",
    ]

    def once() -> None:
        for text in answers:
            to_mrkdwn(text)

    rounds("Slack conversion (to_mrkdwn, 3 answers)", "3 answers", once, 200)


def bench_context() -> None:
    from tests.kits.memory_kit import memory_at

    data = scratch() / "data"
    memory = memory_at(data)
    agent = memory.agent("coordinator")
    agent.remember("The deploy window is Tuesday.", "slack:C1")
    memory.shared.note_person("U1", "prefers short answers")
    memory.shared.add_decision("Ship on Tuesdays.", "slack:C1")
    system = "You are the coordinator.\n" * 400

    rounds(
        "memory context of a turn (Memory.context)",
        "turn",
        lambda: memory.context("coordinator", ["U1"], system, ""),
        300,
    )


def bench_capture() -> None:
    from agents.memory.capture import captures

    lines = [
        "please say-123 thanks, the deploy went fine today and the build is green.",
        "ok t1 hello there, how are you doing this fine morning",
        "We decided to ship on Tuesday. My name is Ann and I live in Berlin.",
    ]
    rounds("auto-capture of heard lines (captures, 3 lines)", "3 lines",
           lambda: [captures(line) for line in lines], 1000)  # fmt: skip


def bench_soul() -> None:
    from types import SimpleNamespace

    from agents.loop import prompts
    from agents.services import AgentInfo

    data = scratch() / "data"
    services: Any = SimpleNamespace(data_dir=data, prompt_parts=[])
    info = AgentInfo("coordinator", "coordinator")
    rounds("a new conversation's system prompt (prompts.build)", "prompt",
           lambda: prompts.build(services, info, "The role's text."), 1000)  # fmt: skip


def bench_log() -> None:
    import logging

    from bot import cli
    from bot.core import redact
    from config.settings import load_settings

    data = scratch() / "data"
    settings = load_settings(None, {"SWITCHBOARD_DATA_DIR": str(data)})
    logging.basicConfig(filename=data.parent / "bench.log", level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")  # fmt: skip
    getattr(cli, "_quiet_per_request", lambda: None)()  # as `run` sets it up, where it does
    redact.install(settings)
    client = logging.getLogger("httpx2")
    url = "http://127.0.0.1:8080/v1/messages"
    rounds("the HTTP client's log line of a model call", "call",
           lambda: client.info('HTTP Request: %s %s "%s %d %s"', "POST", url, "HTTP/1.1", 200,
                               "OK"), 2000)  # fmt: skip


def bench_prune() -> None:
    import json

    from bot.store.core import Store
    from bot.store.prune import _NEEDED
    from bot.store.prune_kv import KeyBatches

    data = scratch()
    store = Store(data / "switchboard.db")
    record = json.dumps({"opening": "0" * 32, "system": "You are the coordinator. " * 400})
    now = time.time()
    with store.tx():
        for i in range(3000):
            store.execute(
                "INSERT INTO conversations (agent, key, target, updated_at) VALUES (?, ?, ?, ?)",
                ("coordinator", f"slack:C{i}", None, now),
            )
            store.set_kv(f"prompt:coordinator:slack:C{i}", record)
    keys = KeyBatches(store, 100, _NEEDED)
    rounds("the pruner's scan for orphaned key/value rows (3,000 conversations)", "scan",
           lambda: keys._orphans(now - 86_400), 3)  # fmt: skip
    store.close()


def bench_call() -> None:
    from agents.model.providers import Endpoints, _anthropic
    from agents.model.providers.anthropic import AnthropicBackend
    from tests.fakes.anthropic_api import FakeAnthropic, text

    schema = {"type": "object", "required": ["a0"],
              "properties": {f"a{j}": {"type": "string", "description": "an argument " * 5}
                             for j in range(5)}}  # fmt: skip
    tools = [{"name": f"tool_{i}", "description": "Does a thing. " * 20, "input_schema": schema}
             for i in range(18)]  # fmt: skip
    said = [{"role": role, "content": [{"type": "text", "text": f"{role} {i} " * 40}]}
            for i in range(6) for role in ("user", "assistant")]  # fmt: skip
    request: Any = {
        "model": "claude-sonnet-5", "max_tokens": 32000, "tools": tools,
        "system": [{"type": "text", "text": "You are the coordinator. " * 200}],
        "messages": [*said, {"role": "user", "content": [{"type": "text", "text": "Now?"}]}],
    }  # fmt: skip
    reply = [text("Here is a fairly ordinary answer of a few sentences. " * 6)]
    with FakeAnthropic(lambda call: reply) as fake:
        backend = AnthropicBackend(lambda: _anthropic(Endpoints("k", fake.url)))
        loop = asyncio.new_event_loop()
        rounds("a streamed model call (the Anthropic backend, the SDK)", "call",
               lambda: loop.run_until_complete(backend.create(request, None)), 50,
               clock=time.thread_time)  # fmt: skip
        loop.run_until_complete(backend.close())
        loop.close()


async def _turns(
    count: int, sql: Counter[str] | None = None, pages: list[list[int]] | None = None
) -> tuple[float, float, float, Path]:
    """CPU per routed message (the bot's, the fake model's, the event loop thread's) and
    the database. `sql` counts statements; `pages` gets the WAL's frames the counted turns wrote."""
    from bot.settle import settle
    from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool
    from tests.kits.app_kit import Recorder, inbound, make_settings, running_app

    def answer(call: Call) -> Reply:
        said = call.last_text
        if "tool-" in said and not call.tool_results():
            return Reply([tool("list_workers")])
        return Reply([text(f"ok {said.split()[-1] if said.split() else ''}")])

    with FakeAnthropic(answer) as fake:
        data = scratch() / "data"
        rec = Recorder()
        async with running_app(make_settings(data, fake), [rec]) as app:

            async def run(n: int, first: int) -> None:
                for i in range(first, first + n):
                    word = "tool-" if i % 4 == 0 else "say-"
                    app.human.accept(inbound(f"please {word}{i}", conversation=f"c{i // 5}"))
                    await rec.wait_count(i + 1, timeout=30)
                await settle(app)

            await run(40, 0)  # warm: the SDK loaded, the first prompts built
            if sql is not None:
                counted(sql)
            if pages is not None:  # an empty WAL, then no checkpoint: it only grows
                if app.store.wal is not None:
                    app.store.wal.close()
                app.store.execute("PRAGMA wal_autocheckpoint=0")
                app.store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            fake_thread, loop_thread = fake._thread, threading.main_thread()
            start, fake_start = time.process_time(), cpu_of(fake_thread)
            loop_start = cpu_of(loop_thread)
            await run(count, 40)
            spent = time.process_time() - start
            fake_spent = cpu_of(fake_thread) - fake_start
            loop_spent = cpu_of(loop_thread) - loop_start
            if pages is not None:
                pages.append(_wal_frames(app.store.where))
    database = Path(str(app.store.where))
    return (spent - fake_spent) / count, fake_spent / count, loop_spent / count, database


def counted(sql: Counter[str]) -> None:
    """Every statement the SQLite connection runs from now on, counted in `sql`."""
    from bot.store import sqlite

    def wrap(method: Any) -> Any:
        def run(self: Any, statement: str, args: Any = ()) -> Any:
            sql[" ".join(statement.split())[:90]] += 1
            return method(self, statement, args)

        return run

    sqlite.Connection.execute = wrap(sqlite.Connection.execute)  # type: ignore[method-assign]
    sqlite.Connection.executemany = wrap(sqlite.Connection.executemany)  # type: ignore[method-assign]


def bench_sql(count: int) -> None:
    sql: Counter[str] = Counter()
    asyncio.run(_turns(count, sql))
    print(f"SQL statements per routed message: {sum(sql.values()) / count:.2f}")
    for statement, n in sql.most_common(8):
        print(f"  {n / count:5.2f}  {statement}")


def _wal_frames(database: str | Path) -> list[int]:
    """The page number of each frame in a SQLite WAL of 4 KB pages, in the order written;
    SystemExit when a frame is not of the WAL's current run (it started over meanwhile)."""
    data = Path(f"{database}-wal").read_bytes()
    salts, size = data[16:24], 4096 + 24  # a frame: a 24-byte header, then the page
    frames = range(32, len(data) - size + 1, size)
    if any(data[at + 8 : at + 16] != salts for at in frames):
        raise SystemExit("the WAL started over during the run: no figure")
    return [int.from_bytes(data[at : at + 4], "big") for at in frames]


def bench_pages(count: int) -> None:
    import sqlite3

    frames: list[list[int]] = []
    database = asyncio.run(_turns(count, pages=frames))[3]
    written = frames[0]
    with sqlite3.connect(database) as db:  # which table or index each page now belongs to
        owner = dict(db.execute("SELECT pageno, name FROM dbstat"))
    by = Counter(owner.get(page, "(freed since)") for page in written)
    print(
        f"WAL pages per routed message: {len(written) / count:.2f} (4 KB each), by table or index:"
    )
    for name, n in by.most_common():
        print(f"  {n / count:5.2f}  {name}")


def bench_turn(count: int) -> None:
    bot, fake, loop, _ = asyncio.run(_turns(count))
    print(f"coordinator turn, the bot's CPU: {bot * 1000:.2f} ms per routed message, "
          f"{loop * 1000:.2f} of them on the event loop's thread (the rest: other threads, "
          f"mostly the model thread's SDK work); the fake model: {fake * 1000:.2f} ms, "
          "not counted")  # fmt: skip


def measure(part: str, turns: int) -> None:
    import bot

    print(f"tree: {Path(bot.__file__).resolve().parents[1]}")
    for name in PARTS if part == "all" else (part,):
        if name == "turn":
            bench_turn(turns)
        elif name == "sql":
            bench_sql(turns)
        elif name == "pages":
            bench_pages(turns)
        else:
            {
                "context": bench_context,
                "check": bench_check,
                "mrkdwn": bench_mrkdwn,
                "capture": bench_capture,
                "soul": bench_soul,
                "log": bench_log,
                "prune": bench_prune,
                "call": bench_call,
            }[name]()


def against(other: Path, part: str, runs: int, turns: int) -> None:
    here = Path(__file__).resolve()
    for run in range(runs):
        for tree in (other, TREE):
            env = {**os.environ, "BENCH_TREE": str(tree), "PYTHONPATH": str(tree)}
            args = [sys.executable, str(here), "--part", part, "--turns", str(turns)]
            print(f"-- run {run + 1}, {'before' if tree == other else 'after'}", flush=True)
            subprocess.run(args, env=env, cwd=tree, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=[*PARTS, "all"], default="all")
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--against", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.against is not None:
        against(args.against.resolve(), args.part, args.runs, args.turns)
    else:
        measure(args.part, args.turns)


if __name__ == "__main__":
    main()
