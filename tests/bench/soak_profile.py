"""Where the soak's CPU went: py-spy's raw stacks (bench_soak.py --profile) sorted into
what the bot (or the fakes) was doing, every sample counted once.

    .venv/bin/python tests/bench/soak_profile.py DATA/profile.txt [--seconds 100]
    .venv/bin/python tests/bench/soak_profile.py DATA/fakes-profile.txt --fakes

Each stack goes to the first bucket whose rule matches one of its frames (ordered from
the most specific: the model call's parts before the agent loop that makes it); stacks
whose innermost frame is a wait (a thread blocked on a lock, the selector, a pool's
queue) are idle, not CPU, and are counted apart. What no rule names is `other`, with
its commonest stacks printed, so the buckets always add up to 100% of the busy samples.
With `--seconds` (how long py-spy recorded, at `--rate` samples a second: 50 unless
told), the busy samples are also given as cores, to set beside the CPU the soak measured
from /proc. `--ours` sorts the same busy samples by our function instead: the innermost
frame of agents/, bot/, channels/ or config/ in each stack (the SDK work it called is
counted in it); a stack with no frame of ours (an SDK's own task, the event loop) goes
under its bucket's name. `--ms M` (CPU per routed message from /proc) turns the shares
into milliseconds per message. Record with py-spy's `--gil` to count only samples that
hold the GIL (Python's CPU; SQLite and socket calls release it), without it to count
every running sample (waits for the GIL or a core included).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

IDLE = (
    "Condition.wait (",
    "_worker (",
    "EpollSelector.select (",
    "_do_waitpid (",
    "Event.wait (",
    "Thread.join (",
    "lock.acquire (",
)
Rule = tuple[str, Callable[[str], bool]]
OURS = re.compile(r"\((agents|bot|channels|config)/")


def py_spy(pid: int, seconds: float, tmp: Path) -> subprocess.Popen[bytes] | None:
    """py-spy recording the bot for `seconds` (if asked and installed), in the background:
    raw stacks in profile.txt under the run's data dir, and this process's (the fakes')
    in fakes-profile.txt; returns the bot's. tests/bench/soak_profile.py sorts either."""
    spy = Path(sys.executable).parent / "py-spy"
    if not seconds:
        return None
    if not spy.exists():
        print(f"--profile: no {spy} (pip install py-spy); not profiled", file=sys.stderr)
        return None
    for who, name in ((os.getpid(), "fakes-profile.txt"), (pid, "profile.txt")):
        spied = subprocess.Popen(
            [str(spy), "record", "-p", str(who), "-d", str(int(seconds)), "-f", "raw", "-o",
             str(tmp / name), "-r", "50"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    return spied


def has(*names: str) -> Callable[[str], bool]:
    return lambda stack: any(name in stack for name in names)


def both(a: Callable[[str], bool], b: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda stack: a(stack) and b(stack)


BOT: list[Rule] = [
    ("model call: reading the streamed answer (SDK SSE events, accumulate)",
     has("AsyncMessageStream.get_final_message", "AsyncMessageStream.until_done")),
    ("model call: sending the request (SDK copy + JSON, httpx, socket)",
     has("AsyncMessageStreamManager.__aenter__")),
    ("model call: the rest (SDK options, our provider)",
     has("AnthropicBackend.", "Provider.complete")),
    ("turn: context, memory, prompt, token estimate",
     has("fit (", "AgentLoop.add_context", "Memory.context", "turn_context")),
    ("turn: checkpoint and absorb (SQL transaction)",
     has("AgentLoop.checkpoint", "AgentLoop.absorb")),
    ("turn: the rest of the agent loop (speak, tools, sessions)",
     has("AgentLoop.", "Session.", "Coordinator.", "Worker.run", "Team._guard")),
    ("outbox: Slack post (mrkdwn, SDK, HTTP)",
     both(has("Outbox._drain"), has("SlackChannel", "SlackPoster"))),
    ("outbox: Discord and email posts",
     both(has("Outbox._drain"), has("Discord", "Email", "smtp"))),
    ("outbox: claim, attempts, SQL", has("Outbox.")),
    ("status lines (Slack setStatus, clear)", has("Progress.", "SlackProgress.")),
    ("Slack intake: event dispatch and journal", has("SlackEvents.", "on_event")),
    ("Slack intake: Socket Mode receive, parse, ack (SDK)",
     has("slack_sdk", "slack_bolt")),
    ("Discord", has("discord", "Discord")),
    ("email channel", has("channels/email", "aioimaplib", "imap")),
    ("triggers (APScheduler)", has("apscheduler", "bot/triggers")),
    ("human node, router, bus", has("bot/inbox", "bot/core/bus")),
    ("events.jsonl, audit, usage", has("bot/core/events.py", "bot/ledger")),
    ("operator HTTP (/metrics the soak reads)", has("bot/ops", "aiohttp/web")),
    ("pruning, WAL", has("prune", "growth")),
    ("MCP client", has("mcp/")),
    ("HTTP writes outside the above (aiohttp, httpx)", has("aiohttp", "httpx", "httpcore")),
    ("store (other)", has("bot/store")),
    ("asyncio itself (select, callbacks, tasks)", has("asyncio/")),
]  # fmt: skip
FAKES: list[Rule] = [
    ("fake model: request checks and thinking (the API's rules)",
     has("anthropic_rules.py", "anthropic_thinking.py", "anthropic_params.py")),
    ("fake model: the script (soak_traffic.Model)", has("soak_traffic.py:", "Model.__call__")),
    ("fake model: answer, SSE stream", has("anthropic_api.py", "anthropic_stream.py")),
    ("fake Slack: Web API", has("slack_api.py", "slack_streams.py", "slack_files.py")),
    ("fake Slack: Socket Mode events", has("slack_events.py", "send_event")),
    ("fake Discord", has("discord_api.py", "discord_posts.py", "discord_gateway")),
    ("driver: traffic and ledger", has("drive (", "Traffic.", "Ledger.")),
    ("soak: samples, answers check", has("bench_soak.py", "soak_verdict.py", "Answers.")),
    ("SMTP relay, mail", has("aiosmtpd", "servers.py")),
    ("aiohttp server (request parse, response write)", has("aiohttp/")),
    ("asyncio itself (select, callbacks, tasks)", has("asyncio/")),
]  # fmt: skip


def samples(lines: list[str]) -> tuple[list[tuple[str, int]], int]:
    """(each busy stack and its count, the idle samples)."""
    busy: list[tuple[str, int]] = []
    idle = 0
    for line in lines:
        stack, _, n = line.rstrip().rpartition(" ")
        if not stack or not n.isdigit():
            continue
        if stack.split(";")[-1].startswith(IDLE):
            idle += int(n)
        else:
            busy.append((stack, int(n)))
    return busy, idle


def buckets(lines: list[str], rules: list[Rule]) -> tuple[Counter[str], int, Counter[str]]:
    """(samples per bucket, idle samples, the commonest unnamed stacks)."""
    counts: Counter[str] = Counter()
    other: Counter[str] = Counter()
    busy, idle = samples(lines)
    for stack, n in busy:
        name = next((name for name, rule in rules if rule(stack)), "other")
        counts[name] += n
        if name == "other":
            other[";".join(re.sub(r" \(.*/", " (", f) for f in stack.split(";")[-3:])] += n
    return counts, idle, other


def ours(lines: list[str], rules: list[Rule]) -> tuple[Counter[str], int]:
    """(samples per innermost function of ours, idle samples)."""
    counts: Counter[str] = Counter()
    busy, idle = samples(lines)
    for stack, n in busy:
        mine = [frame for frame in stack.split(";") if OURS.search(frame)]
        bucket = next((name for name, rule in rules if rule(stack)), "other")
        name = re.sub(r":\d+\)$", ")", mine[-1]) if mine else f"(no frame of ours) {bucket}"
        if name.startswith("_serve (bot/cli.py"):  # the event loop's own callbacks
            name = f"(the event loop) {bucket}"
        counts[name] += n
    return counts, idle


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--fakes", action="store_true", help="the fakes' process")
    parser.add_argument("--seconds", type=float, default=0.0)
    parser.add_argument("--rate", type=float, default=50.0, help="py-spy's samples a second")
    parser.add_argument("--ours", action="store_true", help="by our innermost function")
    parser.add_argument("--top", type=int, default=40, help="with --ours: lines shown")
    parser.add_argument("--ms", type=float, default=0.0, help="CPU ms per routed message")
    args = parser.parse_args(argv)
    lines, rules = args.profile.read_text().splitlines(), FAKES if args.fakes else BOT
    counts, idle, other = buckets(lines, rules)
    if args.ours:
        counts, idle = ours(lines, rules)
        other = Counter()
    busy = sum(counts.values())
    cores = f" = {busy / args.rate / args.seconds:.2f} cores" if args.seconds else ""
    print(f"{busy + idle} samples: {idle} idle waits (not CPU), {busy} busy{cores} = 100%")
    shown = counts.most_common(args.top if args.ours else None)
    for name, n in shown:
        ms = f" {n / max(busy, 1) * args.ms:5.2f} ms" if args.ms else ""
        print(f"{n / max(busy, 1) * 100:5.1f}%{ms}  {name}")
    if len(shown) < len(counts):
        rest = busy - sum(n for _, n in shown)
        print(f"{rest / max(busy, 1) * 100:5.1f}%  {len(counts) - len(shown)} more functions")
    for stack, n in other.most_common(8):
        print(f"      other {n / max(busy, 1) * 100:4.1f}%: {stack[:160]}")


if __name__ == "__main__":
    main()
