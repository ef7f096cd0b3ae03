"""Hooks benchmark (issue 31): inbound webhooks on the operator HTTP server.

    .venv/bin/python tests/bench/bench_hooks.py

The bot runs in this process with the terminal recorder as its channel, its model a
fast fake in another process (tests/bench/fast_fake.py: answers at once).

1. Receipt to 2xx: sequential signed GitHub deliveries, each new (verify, parse, trim,
   journal with its audit line, answer), timed at the client: filtered out (no turn),
   each starting a coordinator turn back to back, the same paced at PACED_RATE/s, and
   Alertmanager payloads of 500 alerts (filtered out). Target p50/p99 <= 5 ms.
2. Sustained rate: an Alertmanager storm (GROUPS groups, STORM notifications in all,
   CONCURRENCY at once), every one answered 2xx, then counted in the journal: nothing
   lost, every one handed over or coalesced, one or two turns per group. Target >= 500/s.
3. Receipt to the first visible post: sequential deliveries, each a new group, from the
   request's start to the recorder receiving the agent's answer.

`--slices`: only the phases with a turn per delivery, under tests/bench/loop_slices.py's
probe: the event loop's slices, the longest by task and code (slower: a probe's figures).

Each phase also prints the bot's CPU time per request (process time over the phase /
requests; the clients and the model run in other processes): wall times on a shared
machine grow with its load, CPU time does not. For the phases that start turns the
clock stops when every turn has posted, so it is the cost of the whole delivery.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.app import App  # noqa: E402
from bot.ops.hooks_samples import alertmanager, encoded, signed, workflow_run  # noqa: E402
from tests.bench.bench_core import FastFake, pct  # noqa: E402
from tests.bench.bench_ops import free_port  # noqa: E402
from tests.bench.loop_slices import LoopSlices  # noqa: E402
from tests.kits.app_kit import Recorder, make_settings, running_app  # noqa: E402
from tests.kits.hooks_kit import SECRET, toml  # noqa: E402

ACKS = 500
STORM = 5000
GROUPS = 20
CONCURRENCY = 32
POSTS = 30
PACED_RATE = 20.0
PACED = 100
BIG = 100


def hook(name: str, kind: str) -> dict[str, object]:
    return {"name": name, "kind": kind, "secret": SECRET, "deliver_to": "terminal",
            "action": "Say what happened.", "cooldown_seconds": 60}  # fmt: skip


async def post(
    session: aiohttp.ClientSession, url: str, body: bytes, headers: dict[str, str]
) -> int:
    async with session.post(url, data=body, headers=headers) as response:
        await response.read()
        return response.status


async def acks(url: str, name: str = "ci", count: int = ACKS, pace: float = 0.0) -> list[float]:
    """Timed by a client in another process (it would share this loop otherwise)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--acks", url, name, str(count), str(pace),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await proc.communicate()
    return [float(x) for x in json.loads(out)]


def ack_request(name: str, i: int) -> tuple[bytes, dict[str, str]]:
    if name == "big":  # 500 alerts, each request a new group
        body = encoded(alertmanager("firing", 500, group=f"B{i}-{uuid.uuid4().hex[:6]}"))
        return body, signed("alertmanager", SECRET, body)
    body = encoded(workflow_run())
    return body, signed("github", SECRET, body, str(uuid.uuid4()))


async def send_acks(url: str, name: str, count: int, pace: float) -> None:
    times = []
    async with aiohttp.ClientSession() as session:
        for i in range(count):
            body, headers = ack_request(name, i)
            start = time.perf_counter()
            assert await post(session, f"{url}/hooks/{name}", body, headers) == 202
            times.append((time.perf_counter() - start) * 1000)
            if pace:
                await asyncio.sleep(max(0.0, 1 / pace - (time.perf_counter() - start)))
    print(json.dumps(times))


def storm_bodies() -> list[bytes]:
    out = []
    for i in range(STORM):
        payload = alertmanager("firing", 1 + i // GROUPS % 5, group=f"G{i % GROUPS}")
        for alert in payload["alerts"]:
            alert["startsAt"] = f"2026-11-28T09:{i // 60 % 60:02d}:{i % 60:02d}Z"
        out.append(encoded(payload))
    return out


async def send_storm(url: str) -> None:
    """The load generator, in its own process (`--storm URL`): prints rate and statuses."""
    bodies = storm_bodies()
    headers = signed("alertmanager", SECRET, b"")
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    statuses: list[int] = []

    async def sender(session: aiohttp.ClientSession) -> None:
        while not queue.empty():
            statuses.append(await post(session, f"{url}/hooks/alerts", queue.get_nowait(), headers))

    start = time.perf_counter()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=CONCURRENCY)) as s:
        await asyncio.gather(*(sender(s) for _ in range(CONCURRENCY)))
    seconds = time.perf_counter() - start
    print(json.dumps({"rate": len(bodies) / seconds, "statuses": statuses}))


async def storm(app: App, url: str) -> tuple[float, int, int, int]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--storm", url, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    found = json.loads(out)
    statuses = found["statuses"]
    assert all(200 <= s < 300 for s in statuses), set(statuses)
    await asyncio.sleep(1.0)
    journaled = app.store.db.execute(
        "SELECT count(*) FROM inbound WHERE channel = 'hook' AND message_id LIKE 'alerts/%'"
    ).fetchone()[0]
    assert app.ops.hooks is not None
    outcomes = [d["outcome"] for d in app.ops.hooks.desk.recent]
    handed = sum(1 for o in outcomes if o.startswith("handed"))
    return found["rate"], journaled, statuses.count(202), handed


async def first_posts(url: str, recorder: Recorder) -> list[float]:
    times = []
    async with aiohttp.ClientSession() as session:
        for i in range(POSTS):
            before = len(recorder.sent)
            body = encoded(alertmanager(group=f"P{i}"))
            start = time.perf_counter()
            assert (
                await post(
                    session, f"{url}/hooks/posts", body, signed("alertmanager", SECRET, body)
                )
                == 202
            )
            await recorder.wait_count(before + 1, timeout=30)
            times.append((time.perf_counter() - start) * 1000)
    return times


def spread(what: str, values: list[float], cpu: float | None = None) -> None:
    per = f"; CPU {cpu * 1000 / len(values):.2f} ms/request" if cpu is not None else ""
    print(f"{what}: p50 {statistics.median(values):.2f} ms, p99 {pct(values, 99):.2f} ms{per}")


async def timed_acks(
    what: str, url: str, recorder: Recorder, name: str, count: int = ACKS,
    pace: float = 0.0, turns: bool = False,
) -> None:  # fmt: skip
    """One receipt-to-2xx phase, with the bot's CPU time per request (until every turn
    it started has posted, when it starts turns)."""
    before, cpu = len(recorder.sent), time.process_time()
    times = await acks(url, name, count, pace)
    if turns:
        await recorder.wait_count(before + count, timeout=120)
    spread(what, times, time.process_time() - cpu)


async def warm_up(url: str) -> None:
    """The bot's start-up work (the model SDK, catching up) is over before the clocks
    start: a few deliveries, then the process idles; its idle CPU is printed."""
    await acks(url, "quiet", 50)
    await asyncio.sleep(3.0)
    cpu = time.process_time()
    await asyncio.sleep(2.0)
    print(f"idle bot: CPU {(time.process_time() - cpu) * 500:.1f} ms/s (counted in the figures)")


async def measure(app: App, url: str, recorder: Recorder) -> None:
    await warm_up(url)
    await timed_acks(f"receipt -> 2xx, filtered out: no agent turn ({ACKS} sequential)",
                     url, recorder, "quiet")  # fmt: skip
    await timed_acks(f"receipt -> 2xx, each a coordinator turn ({ACKS} back to back; target "
                     "<= 5 ms)", url, recorder, "ci", turns=True)  # fmt: skip
    await timed_acks(f"receipt -> 2xx, each a coordinator turn ({PACED} at {PACED_RATE:.0f}/s)",
                     url, recorder, "ci", PACED, PACED_RATE, turns=True)  # fmt: skip
    await timed_acks(f"receipt -> 2xx, Alertmanager 500 alerts (~190 KB), filtered out ({BIG})",
                     url, recorder, "big", BIG)  # fmt: skip
    cpu = time.process_time()
    rate, journaled, new, handed = await storm(app, url)
    cpu = time.process_time() - cpu
    print(f"alert storm ({STORM} notifications, {GROUPS} groups, {CONCURRENCY} at once, sent "
          "by another process): "
          f"{rate:.0f}/s answered 2xx (target >= 500/s); "
          f"CPU {cpu * 1000 / STORM:.2f} ms/request")  # fmt: skip
    waiting = len(app.store.inbound_by_status("hook"))
    print(f"  journaled {journaled} (new {new}, the rest duplicates); waiting out the group "
          f"cooldown: {waiting}; turns among the newest 50 outcomes: {handed}")  # fmt: skip
    spread(f"receipt -> first visible post ({POSTS} sequential, model answers at once)",
           await first_posts(url, recorder))  # fmt: skip


async def slices(url: str, recorder: Recorder) -> None:
    await warm_up(url)
    for what, count, pace in (("back to back", 300, 0.0), ("paced", PACED, PACED_RATE)):
        with LoopSlices() as probe:
            await timed_acks(f"receipt -> 2xx, each a coordinator turn ({count} {what}, probed)",
                             url, recorder, "ci", count, pace, turns=True)  # fmt: skip
        probe.report()


async def main() -> None:
    fake = FastFake()
    data_dir = Path(tempfile.mkdtemp())
    config = data_dir / "switchboard.toml"
    quiet = {**hook("quiet", "github"), "filter": {"conclusion": "cancelled"}}
    big = {**hook("big", "alertmanager"), "filter": {"status": "resolved"}}
    entries = [hook("ci", "github"), hook("alerts", "alertmanager"), hook("posts", "alertmanager")]
    config.write_text(toml([*entries, quiet, big]))
    port = free_port()
    env = {"SWITCHBOARD_CONFIG": str(config), "SWITCHBOARD_HTTP_PORT": str(port)}
    settings = make_settings(data_dir / "data", fake, **env)  # type: ignore[arg-type]
    recorder = Recorder()
    try:
        async with running_app(settings, [recorder]) as app:
            url = f"http://127.0.0.1:{port}"
            if "--slices" in sys.argv:
                await slices(url, recorder)
            else:
                await measure(app, url, recorder)
    finally:
        fake.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--storm"]:
        asyncio.run(send_storm(sys.argv[2]))
    elif sys.argv[1:2] == ["--acks"]:
        asyncio.run(send_acks(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])))
    else:
        asyncio.run(main())
