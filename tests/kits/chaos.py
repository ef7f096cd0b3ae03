"""The chaos harness: `switchboard run` on all three channels, killed with SIGKILL at
random moments while people talk to it, then checked for what got lost or repeated.

The world: the fake Slack (Socket Mode), the fake Discord (gateway + REST), a real
dovecot with an aiosmtpd relay, and the fake Anthropic API, all on 127.0.0.1. The bot
runs as a subprocess over one data dir. A seeded script (`Workload`) posts messages,
each carrying a tag (`t007`), on every channel: Slack mentions, follow-ups in their
threads and DMs, Discord mentions and DMs, new mails and replies in a mail thread; and
one request that makes the coordinator spawn a worker, who asks a question in its
Slack thread, parks, and publishes once the test answers there. Meanwhile the process
is killed (`kill -9`) at random moments and started again, `kills` times.

The model answers every person's message with `ack <the tags it was given>`, so each
reply names the messages it answers. At the end (the bot running undisturbed until
every tag is answered, or a deadline), `Tally` counts per tag:

- lost: no reply names it;
- duplicated: more than one distinct reply names it (email: distinct Message-IDs; the
  same Message-ID handed to SMTP twice is counted apart, as `resent`);
- wrong thread: a reply that names it sits somewhere else than its conversation
  (Slack channel + thread, Discord thread opened on the mention or the DM, the email
  thread by In-Reply-To/References);
- the worker's question posted once, and its result delivered once.

Used by tests/store/test_chaos.py (few kills in CI, many with --kills), bench_chaos.py (20
kills, several seeds), and with two nodes on PostgreSQL (tests/kits/chaos_nodes.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import re
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Protocol

from tests.email.person import Person, body_text
from tests.email.servers import Dovecot, RelayHandler, SmtpRelay
from tests.fakes import discord_payloads as dp
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import BOT_USER, FakeSlack
from tests.kits.proc import Run

TAG = re.compile(r"\bt\d{3}\b")
_worlds = itertools.count(1)  # chaos_world's, in this process
QUESTION = "Data center or consumer GPUs?"
ANSWER = "consumer, please"
WORKER = "Alice"


def respond(call: Call) -> list[dict[str, Any]]:
    """The model: the coordinator acks the tags it is given (and spawns the worker on
    `research`), the worker asks once, then publishes what it was told."""
    last = call.last_text
    if call.agent != "coordinator":
        if " answered: " in last:
            answer = last.split(" answered: ", 1)[1].split("\n", 1)[0]
            return [tool("publish", result=f"Report based on: {answer}")]
        if call.tool_results() or len(call.messages) > 1:
            return [text(f"{call.agent} waits.")]
        return [tool("ask_human", question=QUESTION)]
    if "published its result" in last:
        return [text(f"{WORKER} finished: " + last.split("published its result]: ", 1)[1])]
    if call.tool_results():
        return [text(f"{WORKER} is on it.")]
    if "research" in last:
        return [tool("spawn_worker", name=WORKER, task="research GPU pricing")]
    tags = sorted(set(TAG.findall(last)))
    return [text("ack " + " ".join(tags))] if tags else [text("noted")]


@dataclass
class Sent:
    tag: str
    channel: str  # slack | discord | email
    where: str  # the conversation: slack C1/ts, discord thread or DM id, email root id


@dataclass
class World:
    slack: FakeSlack
    discord: FakeDiscord
    anthropic: FakeAnthropic
    ann: Person
    bot_address: str
    env: dict[str, str]
    workdir: Path


class Workload:
    """The scripted people, driven by one seeded random generator."""

    def __init__(self, world: World, rng: random.Random, messages: int) -> None:
        self.world = world
        self.rng = rng
        self.messages = messages
        self.sent: list[Sent] = []
        self.slack_threads: list[str] = []  # "C1/ts" of mentions
        self.mail_threads: list[EmailMessage] = []
        self.research: str | None = None  # the Slack thread of the worker's task
        self._n = 0
        self.log: list[str] = []
        self._dm = world.discord.open_dm()

    def _tag(self) -> str:
        self._n += 1
        return f"t{self._n:03d}"

    async def step(self) -> None:
        """Post one message of a random kind."""
        kind = self.rng.choice(
            ["slack", "slack", "slack_reply", "slack_dm", "discord", "discord_dm", "mail", "mail"]
        )
        tag = self._tag()
        await getattr(self, "_" + kind)(tag)
        self.log.append(f"{time.time():.3f} {tag} {kind}")

    async def _slack(self, tag: str) -> None:
        ts = self.world.slack.post(f"<@{BOT_USER}> please look at {tag}", channel="C1")
        self.slack_threads.append(f"C1/{ts}")
        self.sent.append(Sent(tag, "slack", f"C1/{ts}"))

    async def _slack_reply(self, tag: str) -> None:
        if not self.slack_threads:
            return await self._slack(tag)
        where = self.rng.choice(self.slack_threads)
        channel, thread = where.split("/")
        self.world.slack.post(f"and also {tag}", channel=channel, thread_ts=thread)
        self.sent.append(Sent(tag, "slack", where))

    async def _slack_dm(self, tag: str) -> None:
        self.world.slack.post(f"a DM about {tag}", channel="D1", channel_type="im")
        self.sent.append(Sent(tag, "slack", "D1"))

    async def _discord(self, tag: str) -> None:
        mid = self.world.discord.say(f"<@{dp.BOT_ID}> please check {tag}")
        self.sent.append(Sent(tag, "discord", mid))

    async def _discord_dm(self, tag: str) -> None:
        self.world.discord.say(f"in a DM, {tag}", channel=self._dm)
        self.sent.append(Sent(tag, "discord", self._dm))

    async def _mail(self, tag: str) -> None:
        ann = self.world.ann
        if self.mail_threads and self.rng.random() < 0.5:
            parent = self.rng.choice(self.mail_threads)
            msg = ann.compose(self.world.bot_address, f"Re: {parent['Subject']}", tag,
                              reply_to=parent)  # fmt: skip
        else:
            msg = ann.compose(self.world.bot_address, f"About {tag}", f"Please handle {tag}.")
        self.mail_threads.append(msg)
        await ann.send(msg)
        root = _root(msg)
        self.sent.append(Sent(tag, "email", root))

    async def warm_up(self) -> None:
        """People who DM the bot have done so before: Discord gives a bot no list of
        its DMs, so a first DM sent while it is down cannot be read back (README)."""
        tag = self._tag()
        await self._discord_dm(tag)
        self.log.append(f"{time.time():.3f} {tag} warm-up")

    async def ask_research(self) -> None:
        ts = self.world.slack.post(f"<@{BOT_USER}> research GPU pricing", channel="C1")
        self.research = ts

    def answer_question(self) -> bool:
        """Answer the worker once its question is in the thread; True when answered."""
        if self.research is None:
            return False
        asked = [p for p in self.world.slack.messages if QUESTION in str(p.get("text"))]
        if not asked:
            return False
        self.world.slack.post(ANSWER, channel="C1", thread_ts=self.research)
        return True


def _root(msg: EmailMessage) -> str:
    refs = str(msg.get("References") or "").split()
    return refs[0] if refs else str(msg["Message-ID"])


@dataclass
class Tally:
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    wrong_thread: list[str] = field(default_factory=list)
    resent: int = 0  # email: one Message-ID handed to SMTP twice
    questions: int = 0
    results: int = 0
    streamed: int = 0  # Slack answers that were streamed (chat.startStream), not posted
    timeline: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.wrong_thread) and (
            self.questions == 1 and self.results == 1
        )

    def line(self) -> str:
        return (
            f"lost={len(self.lost)} duplicated={len(self.duplicated)} "
            f"wrong_thread={len(self.wrong_thread)} question_asked={self.questions} "
            f"result_delivered={self.results} email_resent={self.resent} "
            f"slack_streamed={self.streamed}"
            + (f" lost:{self.lost}" if self.lost else "")
            + (f" dup:{self.duplicated}" if self.duplicated else "")
            + (f" wrong:{self.wrong_thread}" if self.wrong_thread else "")
        )


def replies(world: World, mails: list[EmailMessage]) -> dict[str, list[tuple[str, str]]]:
    """Tag -> (where, reply id) of every bot reply that names it."""
    out: dict[str, list[tuple[str, str]]] = {}
    for post in world.slack.messages:
        where = (
            f"{post['channel']}/{post['thread_ts']}" if post.get("thread_ts") else post["channel"]
        )
        for tag in TAG.findall(str(post.get("text"))):
            out.setdefault(tag, []).append((where, str(post["ts"])))
    for p in world.discord.posts:  # as it reads now: a streamed answer was edited in place
        for tag in TAG.findall(str(world.discord.messages.get(p.id, {}).get("content", p.content))):
            out.setdefault(tag, []).append((p.channel_id, p.id))
    for mail in mails:
        refs = str(mail.get("References") or mail.get("In-Reply-To") or "").split()
        where = refs[0] if refs else ""
        for tag in set(TAG.findall(body_text(mail))):
            out.setdefault(tag, []).append((where, str(mail["Message-ID"])))
    return out


def tally(world: World, workload: Workload, mails: list[EmailMessage]) -> Tally:
    found = replies(world, mails)
    result = Tally()
    ids = Counter(str(m["Message-ID"]) for m in mails)
    result.resent = sum(n - 1 for n in ids.values())
    for sent in workload.sent:
        got = found.get(sent.tag, [])
        distinct = {rid: where for where, rid in got}  # a resent mail counts once
        name = f"{sent.tag}({sent.channel} {sent.where})"
        if not distinct:
            result.lost.append(name)
        elif len(distinct) > 1:
            result.duplicated.append(name)
        if any(where != sent.where for where in distinct.values()):
            result.wrong_thread.append(name)
    result.questions = sum(QUESTION in str(p.get("text")) for p in world.slack.messages)
    result.results = sum("Report based on" in str(p.get("text")) for p in world.slack.messages)
    result.streamed = len(world.slack.streams)
    return result


class Processes(Protocol):
    """What the run starts and kills: `Bot`, or tests/kits/chaos_nodes.py's `Nodes`."""

    log: list[str]

    def start(self) -> None: ...
    async def kill(self) -> Any: ...
    def stop(self) -> None: ...


class Bot:
    """The `switchboard run` subprocess, started and killed over one data dir."""

    def __init__(self, world: World) -> None:
        self.run = Run(world.env, world.workdir)
        self.starts = 0
        self.log: list[str] = []  # when each process started and was killed

    def start(self) -> None:
        self.run.start()
        self.starts += 1
        self.log.append(f"{time.time():.3f} start pid {self.run.pid}")

    async def kill(self) -> None:
        if self.run.proc is not None:
            self.log.append(f"{time.time():.3f} kill pid {self.run.pid}")
            self.run.kill()

    def stop(self) -> None:
        self.run.stop()


async def run_chaos(
    world: World,
    seed: int,
    kills: int,
    messages: int,
    deadline: float = 90.0,
    bot: Processes | None = None,
) -> Tally:
    """The workload over `kills` SIGKILLs of `bot` (one process by default) at random
    moments; then wait for every answer."""
    rng = random.Random(seed)
    workload = Workload(world, rng, messages)
    bot = bot or Bot(world)
    bot.start()
    await _up(world)  # a deployment's first start is no gap: the bot was running
    await workload.warm_up()
    kill_after = sorted(rng.sample(range(1, messages + 1), min(kills, messages)))  # indexes
    answered = False
    try:
        await asyncio.sleep(rng.uniform(0.5, 2.0))
        await workload.ask_research()
        for i in range(1, messages + 1):
            await workload.step()
            await asyncio.sleep(rng.uniform(0.05, 0.6))
            if not answered:
                answered = workload.answer_question()
            while kill_after and kill_after[0] == i:
                kill_after.pop(0)
                await asyncio.sleep(rng.uniform(0.0, 1.5))  # anywhere in what follows
                await bot.kill()
                await asyncio.sleep(rng.uniform(0.0, 1.0))  # down for a moment
                bot.start()
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if not answered:
                answered = workload.answer_question()
            mails = await world.ann.inbox()
            if answered and _settled(world, workload, mails):
                break
            await asyncio.sleep(0.5)
        await asyncio.sleep(2.0)  # room for a late duplicate to show
        mails = await world.ann.inbox()
    finally:
        bot.stop()
    result = tally(world, workload, mails)
    result.timeline = sorted(bot.log + workload.log)
    return result


async def _up(world: World, timeout: float = 60.0) -> None:
    """Until the first process has connected and caught up on Slack and Discord."""
    log = world.workdir / "data" / "events.jsonl"
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        text = log.read_text() if log.exists() else ""
        if all(f'"channel.caught_up", "agent_id": "{k}"' in text for k in ("slack", "discord")):
            return
        await asyncio.sleep(0.2)
    raise AssertionError("switchboard run did not come up in time")


def _settled(world: World, workload: Workload, mails: list[EmailMessage]) -> bool:
    found = replies(world, mails)
    done = all(sent.tag in found for sent in workload.sent)
    return done and any("Report based on" in str(p.get("text")) for p in world.slack.messages)


#: the bot's pacing and retries, quick for a test
QUICK = {
    "SLACK_PACE_SECONDS": "0.02",
    "SWITCHBOARD_OUTBOX_RETRY_BASE_SECONDS": "0.2",
    "SWITCHBOARD_LLM_RETRY_BASE_SECONDS": "0.05",
    "SWITCHBOARD_LLM_RETRY_MAX_SECONDS": "0.5",
    "IMAP_IDLE_SECONDS": "60",
}


def world_env(
    slack: FakeSlack, discord: FakeDiscord, anthropic: FakeAnthropic, mail_env: dict[str, str]
) -> dict[str, str]:
    return {**anthropic.env(), **slack.env(), **discord.env(), **mail_env, **QUICK}


@contextlib.asynccontextmanager
async def chaos_world(
    dovecot: Dovecot, fake: FakeAnthropic, workdir: Path, seed: int, env: dict[str, str]
) -> AsyncIterator[World]:
    """The fakes, an SMTP relay to dovecot, Ann; `env` added to the bot's."""
    fake.responder = respond
    relay = await SmtpRelay(RelayHandler(dovecot)).start()
    # addresses of its own: the session's one dovecot serves every chaos test (and the
    # email tests), and two of them may run with the same --seed
    tag = f"{os.getpid()}x{seed}w{next(_worlds)}"
    bot_address = f"chaos{tag}@localhost"
    ann = Person(f"ann{tag}@localhost", dovecot, relay.port)
    try:
        with FakeSlack() as slack, FakeDiscord() as discord:
            slack.rng.seed(seed)  # which Socket Mode connection gets each event
            mail_env = dovecot.env(bot_address, relay.port, ann.address)
            bot_env = world_env(slack, discord, fake, mail_env) | env
            yield World(slack, discord, fake, ann, bot_address, bot_env, workdir)
    finally:
        await relay.stop()
