"""Prompt-cache reads, the fixed prefix's size and the cost per request of two source
trees, measured in one run.

    .venv/bin/python tests/bench/bench_cache.py BEFORE_TREE [AFTER_TREE]

For issue 16 (item 5). BEFORE_TREE is a copy of the tree before the change, e.g.
`git archive main | tar -x -C /tmp/before`; AFTER_TREE defaults to this tree. In each
tree (a fresh process, as bench_refactor.py does) a scripted 50-turn conversation runs
through the real loop against the fake Anthropic API: three listed people take turns,
every fifth turn asks the bot to `remember` something, some state a preference (which
auto-capture writes to their profile). Then a worker is spawned in another
conversation, for the worker's prefix.

From the recorded requests (tools, then system, then messages, as the API reads them):
each request's input is split into blocks; the cache holds the prefix up to each
breakpoint (`cache_control`) of the previous request of the same conversation; the
request reads from it the longest such prefix it shares. Printed: the share of input
tokens (chars / 4) that are cache reads over the turns after each conversation's first
(target >= 90%), how many requests changed the system prompt, and the tokens of the
fixed prefix (system + tools) of the coordinator and a worker, with the growth.

Issue 26 adds thinking: the tree's own fake answers as its models do (today's fake: the
default `claude-sonnet-5` thinks, each answer opens with a signed thinking block that
must come back within a tool-use cycle). Printed per request: whether it set thinking,
its output tokens as the fake counts them (10 plus the thinking; a real model's thinking
at effort `low` is longer, and billed as output), and its cost at Sonnet 5's prices with
the cache model above (reads 0.1x, writes 1.25x the input price).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
PROBE = """
import asyncio, json, sys, tempfile
from pathlib import Path
sys.path.insert(0, {tree!r})
from bot.core.messages import Target
from tests.fakes.anthropic_api import FakeAnthropic, text, tool
try:
    from tests.kits.app_kit import Recorder, inbound, running_app
    from tests.kits.people_kit import people_settings
except ImportError:  # a tree from before the kits moved to tests/kits/
    from tests.kit import Recorder, inbound, running_app
    from tests.people_kit import people_settings

PEOPLE = '''
[[people]]
name = "Ann"
slack = "U0ANN"
[[people]]
name = "Bob"
discord = "4242"
[[people]]
name = "Cy"
slack = "U0CY"
'''
SPEAKERS = [("U0ANN", "slack"), ("4242", "discord"), ("U0CY", "slack")]

def responder(call):
    if call.agent != "coordinator":
        return [tool("publish", result="the build is green")]
    if call.tool_results():
        return [text("noted")]
    last = call.last_text
    if "please remember" in last:
        return [tool("remember", content="item " + last.rsplit(" ", 1)[-1])]
    if "spawn a helper" in last:
        return [tool("spawn_worker", name="Helper", task="check the build")]
    return [text("answer to " + last[-40:])]

def line(i):
    if i % 5 == 2:
        return f"please remember {{i}}"
    if i % 7 == 3:
        return f"I prefer answers about topic {{i}}."
    return f"question {{i}}: how is the release going?"

async def main():
    fake = FakeAnthropic(responder).start()
    settings = people_settings(Path(tempfile.mkdtemp()), fake, PEOPLE)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        for i in range({turns}):
            sender, channel = SPEAKERS[i % 3]
            msg = inbound(line(i), conversation="c1", sender=sender, channel=channel,
                          reply_to=Target("terminal"))
            app.human.accept(msg)
            await rec.wait_count(i + 1, timeout=30)
        app.human.accept(inbound("spawn a helper", conversation="c2", sender="U0ANN",
                                 channel="slack", reply_to=Target("terminal")))
        await rec.wait_count({turns} + 2, timeout=30)
    fake.stop()
    print(json.dumps([{{"agent": c.agent, "body": c.body,
                        "output": (getattr(c, "answer", None) or {{}}).get("usage", {{}})
                        .get("output_tokens", 10)}} for c in fake.calls]))

asyncio.run(main())
"""


def blocks(body: dict) -> list[tuple[str, bool]]:
    """The request as the cache sees it: (block text, carries a breakpoint), in order."""
    out: list[tuple[str, bool]] = []

    def add(block: dict, prefix: str = "") -> None:
        bare = {k: v for k, v in block.items() if k != "cache_control"}
        out.append((prefix + json.dumps(bare, sort_keys=True), "cache_control" in block))

    for spec in body.get("tools", []):
        add(spec)
    for block in body["system"]:
        add(block, "system:")
    for message in body["messages"]:
        content = message["content"]
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            add(block, message["role"] + ":")
    return out


def tokens(parts: list[tuple[str, bool]]) -> int:
    return sum(len(text) for text, _ in parts) // 4


def cache_read(previous: list[tuple[str, bool]], current: list[tuple[str, bool]]) -> int:
    """Tokens of the longest prefix cached by `previous` that `current` starts with."""
    old, new = [text for text, _ in previous], [text for text, _ in current]
    best = 0
    for end, (_, breakpoint) in enumerate(previous, 1):
        if breakpoint and new[:end] == old[:end]:
            best = end
    return tokens(current[:best])


#: Claude Sonnet 5, USD per million tokens: input, cache read, cache write, output
PRICES = (2.0, 0.20, 2.50, 10.0)


def cost(parts: list[tuple[str, bool]], read: int, output: int) -> float:
    """One request's dollars: what it read from the cache, what its last breakpoint
    writes beyond that, the rest as fresh input, and its output (thinking included)."""
    marked = [i for i, (_, mark) in enumerate(parts, 1) if mark]
    written = max(tokens(parts[: marked[-1]]) - read, 0) if marked else 0
    fresh = tokens(parts) - read - written
    fresh_in, cached, writes, out = PRICES
    return (fresh * fresh_in + read * cached + written * writes + output * out) / 1e6


def figures(calls: list[dict]) -> dict[str, float]:
    last: dict[str, list[tuple[str, bool]]] = {}
    read = total = changed = 0
    dollars = 0.0
    outputs = []
    for call in calls:
        parts = blocks(call["body"])
        key = call["agent"] + json.dumps(call["body"]["messages"][0]["content"][:2])
        previous = last.get(key)
        got = cache_read(previous, parts) if previous is not None else 0
        dollars += cost(parts, got, call["output"])
        outputs.append(call["output"])
        if previous is not None:
            read += got
            total += tokens(parts)
            changed += _system(previous) != _system(parts)
        last[key] = parts
    coordinator = next(c for c in calls if c["agent"] == "coordinator")
    worker = next(c for c in calls if c["agent"] != "coordinator")
    return {
        "share": 100 * read / total,
        "cost_per_request": 1000 * dollars / len(calls),
        "output_per_request": sum(outputs) / len(outputs),
        "thinking": 100 * sum(1 for c in calls if "thinking" in c["body"]) / len(calls),
        "changed": changed,
        "requests": len(calls),
        "coordinator_prefix": _prefix(coordinator["body"]),
        "worker_prefix": _prefix(worker["body"]),
        "coordinator_tools": _tools(coordinator["body"]),
        "worker_tools": _tools(worker["body"]),
    }


def _tools(body: dict) -> dict[str, int]:
    """Each tool's tokens, and the system prompt's under the name `(system)`."""
    sizes = {t["name"]: tokens([(json.dumps(t, sort_keys=True), False)]) for t in body["tools"]}
    system = body["system"]
    text = system if isinstance(system, str) else "".join(b["text"] for b in system)
    return {**sizes, "(system)": tokens([(text, False)])}


def split(before: dict[str, int], after: dict[str, int]) -> str:
    """The growth of the tools both trees have (their descriptions and schemas), apart
    from the system prompt and from tools the later tree adds (features of their own)."""
    both = [name for name in after if name in before and name != "(system)"]
    old, new = sum(before[n] for n in both), sum(after[n] for n in both)
    added = {n: after[n] for n in after if n not in before}
    return (
        f"  the {len(both)} tools both have: {old:,} -> {new:,} ({100 * (new / old - 1):+.1f}%, "
        f"limit +15%); system prompt {before['(system)']:,} -> {after['(system)']:,}; "
        f"new tools {sum(added.values()):,} ({', '.join(sorted(added)) or 'none'})"
    )


def _system(parts: list[tuple[str, bool]]) -> list[str]:
    return [text for text, _ in parts if text.startswith("system:")]


def _prefix(body: dict) -> int:
    return tokens([p for p in blocks(body) if not p[0].startswith(("user:", "assistant:"))])


def measure(tree: Path, turns: int) -> dict[str, float]:
    code = PROBE.format(tree=str(tree), turns=turns)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tree
    )
    return figures(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path, nargs="?", default=HERE)
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    before, after = measure(args.before, args.turns), measure(args.after, args.turns)
    rows = [
        ("cache-read share of input tokens, after each first turn (%)", "share", "{:.1f}"),
        ("requests whose system prompt changed", "changed", "{:.0f}"),
        ("requests", "requests", "{:.0f}"),
        ("requests that set thinking (%)", "thinking", "{:.0f}"),
        (
            "output tokens per request (the fake's count, thinking included)",
            "output_per_request",
            "{:.1f}",
        ),
        ("cost per scripted request at Sonnet 5 prices (USD / 1000)", "cost_per_request", "{:.3f}"),
        ("fixed prefix tokens, coordinator (system + tools)", "coordinator_prefix", "{:,.0f}"),
        ("fixed prefix tokens, worker (system + tools)", "worker_prefix", "{:,.0f}"),
    ]
    print(f"{'':58} {'before':>9} {'after':>9}")
    for label, key, fmt in rows:
        print(f"{label:58} {fmt.format(before[key]):>9} {fmt.format(after[key]):>9}")
    for key in ("coordinator_prefix", "worker_prefix"):
        growth = 100 * (after[key] / before[key] - 1)
        print(f"{key} growth: {growth:+.1f}% in all")
        agent = key.removesuffix("_prefix")
        print(split(before[f"{agent}_tools"], after[f"{agent}_tools"]))


if __name__ == "__main__":
    main()
