"""The soak's team (tests/bench/bench_soak.py): what it says, what the fake model answers,
and the ledger that checks every message was answered exactly once.

Every message a person sends carries a tag (`m12`, a worker's name `W12`, `A12`); the
fake model's answer carries the tag back in a fixed form (`ok m12`, `read m12` for a file
it was shown, `fired m12` for a trigger that fired, `done W12` for a worker's published
result), so the answers the fakes recorded (Slack and Discord posts, mail the SMTP relay
accepted) can be matched one for one against what was sent.

Kinds: a Slack mention opening a thread, a reply in a recent thread, a Discord mention,
a mail delivered over LMTP into dovecot (the bot reads it by IMAP), a Slack file share the
fake hosts (the bot downloads it), a worker that parks on a question and is answered a few
seconds later, a worker whose gated tool call (ops__restart_service) waits for a person's
Approve click or `approve` reply, and a trigger the coordinator schedules that fires.
"""

from __future__ import annotations

import email.message
import email.policy
import email.utils
import itertools
import random
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.fakes import discord_payloads as dp
from tests.fakes.anthropic_api import Call, text, tool, unwrap
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.kept import Kept
from tests.fakes.slack_api import BOT_USER, FakeSlack

#: Slack channels the team talks in: the bot posts at most once a second in each
#: (SLACK_PACE_SECONDS, Slack's own limit), so 20 channels cap the answers near 20/s
CHANNELS = 200
#: Discord text channels the team talks in: Discord opens at most 5 threads per 5 s in a
#: channel (the fake keeps its buckets), so the fake's own two would cap Discord's
#: answers at 2/s, its share of a soak at ~17 messages/s; the rest are added at start
DISCORD_PLACES = (dp.GENERAL, dp.RANDOM, *(dp.RANDOM + 10 + i for i in range(8)))
MENTION = f"<@{BOT_USER}>"
#: an answer the model writes: `ok m12`, `read m12`, `fired m12`, `done W12`, or `busy W12`
#: for a worker the bot would not start (its tool said why, e.g. SWITCHBOARD_MAX_WORKERS)
ANSWER = re.compile(r"\b(ok|read|fired|done|busy) ((?:m|W|A)\d+)\b")
#: a worker's question as the bot posts it
ASKED = re.compile(r"\*(W\d+) asks:\*")
TAG = re.compile(r"\b((?:m|W|A)\d+)\b")
#: (kind, share of the traffic): the rest opens new Slack threads
MIX = (
    ("ambient", 0.15),
    ("burst", 0.06),
    ("discord", 0.12),
    ("worker", 0.04),
    ("approval", 0.02),
    ("trigger", 0.01),
    ("file", 0.03),
    ("email", 0.05),
    ("reply", 0.22),
)
#: a burst: one person writes this many lines in a row in a thread the bot is in
BURST = (2, 4)


class Model:
    """The fake model's script, and when each tagged request first arrived."""

    def __init__(self) -> None:
        self.probes: dict[str, float] = {}
        self.arrived: dict[str, float] = {}
        self.calls = 0
        #: tags that reached the model in one call with other tags (folded into one turn)
        self.folded = 0
        #: workers whose start the bot refused (the tool's error, relayed to the person)
        self.refused: list[str] = []

    def __call__(self, call: Call) -> list[dict[str, Any]]:
        self.calls += 1
        said = call.last_text
        if "probe-" in said:
            token = said.split("probe-", 1)[1].split()[0]
            self.probes.setdefault(token, time.monotonic())
        if call.agent != "coordinator":
            return self.worker(call, call.agent)
        # what people (and the runtime's notes) said in the newest message, not tool results:
        # a turn may take several messages, and a note may ride beside a tool result
        heard = "\n".join(unwrap(b["text"]) for b in call.blocks() if b.get("type") == "text")
        tags = list(dict.fromkeys(TAG.findall(heard)))
        fresh = [tag for tag in tags if tag not in self.arrived]
        self.folded += len(fresh) if len(fresh) > 1 else 0
        for tag in fresh:
            self.arrived[tag] = time.monotonic()
        calls, words = [], []
        for tag in tags:
            if f"spawn {tag}" in heard:
                calls.append(tool("spawn_worker", name=tag, task="Ask which colour, publish."))
            elif f"restart {tag}" in heard:
                calls.append(tool("spawn_worker", name=tag, task="Restart its service, publish."))
            elif f"remind me {tag}" in heard:
                schedule = {"delay_seconds": 3}
                calls.append(
                    tool("schedule", type="delayed", config=schedule, action=f"ping {tag}")
                )
            else:
                words.append(self.answer(heard, tag))
        if not tags and not call.tool_results():
            words.append("ok")
        words += [f"busy {name}" for name in self.spawns_refused(call)]
        return [*calls, text(", ".join(words))] if words or not calls else calls

    def spawns_refused(self, call: Call) -> list[str]:
        """The workers this turn's tool results say were not started: a model tells the
        person so (a silent drop would leave their request unanswered)."""
        failed = {r["tool_use_id"] for r in call.tool_results() if r.get("is_error")}
        if not failed or len(call.messages) < 2:
            return []
        asked = call.blocks(-2)
        names = [
            str(b["input"].get("name"))
            for b in asked
            if b.get("type") == "tool_use" and b["name"] == "spawn_worker" and b["id"] in failed
        ]
        self.refused += names
        return names

    @staticmethod
    def answer(heard: str, tag: str) -> str:
        if f"ping {tag}" in heard:  # the trigger fired
            return f"fired {tag}"
        if f"done {tag}" in heard:  # a worker published: relay its result
            return f"done {tag}"
        if f"filebody-{tag}" in heard:  # the file's own text reached the model
            return f"read {tag}"
        return f"ok {tag}"

    @staticmethod
    def worker(call: Call, name: str) -> list[dict[str, Any]]:
        if call.tool_results():
            return [tool("publish", result=f"done {name}")]
        if name.startswith("A"):  # gated: waits for a person's yes
            return [tool("ops__restart_service", service=name)]
        return [tool("ask_human", question=f"{name}: blue or green?")]


@dataclass
class Ledger:
    """What was sent (by kind), the answers owed (tag -> the answer's word), send times."""

    kinds: Counter[str] = field(default_factory=Counter)
    owed: dict[str, str] = field(default_factory=dict)
    sent_at: dict[str, float] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # tags as sent
    kind_of: dict[str, str] = field(default_factory=dict)
    sent: int = 0
    clicks: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(
        self, kind: str, tag: str | None = None, word: str = "ok", routed: bool = True
    ) -> None:
        with self.lock:
            self.kinds[kind] += 1
            self.sent += routed and kind != "click"
            if tag is not None:
                self.owed[tag] = word
                self.sent_at[tag] = time.monotonic()
                self.order.append(tag)
                self.kind_of[tag] = kind

    def check(self, answers: Counter[tuple[str, str]]) -> tuple[int, list[str], list[str]]:
        """(answered once, missing, answered more than once or wrongly). A worker the bot
        refused to start is answered by the refusal (`busy W12`), once, instead of its result."""
        with self.lock:
            owed = dict(self.owed)
        once, missing, extra = 0, [], []
        for tag, word in owed.items():
            refusal = answers.get(("busy", tag), 0) if word == "done" else 0
            n = answers.get((word, tag), 0) + refusal
            once += n == 1
            if n == 0:
                missing.append(f"{tag} ({self.kind_of[tag]})")
            elif n > 1:
                extra.append(f"{tag} x{n}")
        extra += [
            f"{w} {t}"
            for (w, t) in answers
            if owed.get(t) != w and (w, owed.get(t)) != ("busy", "done")
        ]
        return once, missing, extra


@dataclass
class Traffic:
    """The team: what it has said, and the answers it owes to parked workers."""

    slack: FakeSlack
    discord: FakeDiscord
    mail: Callable[[int], None] | None = None  # delivers mail m<n> to the bot
    ledger: Ledger = field(default_factory=Ledger)
    #: the threads still talked in: a thread goes quiet after ~300 newer ones
    threads: deque[tuple[str, str]] = field(default_factory=lambda: deque(maxlen=300))
    answers: deque[tuple[float, str, str, str]] = field(default_factory=deque)
    ids: Iterator[int] = field(default_factory=itertools.count)
    seen_posts: int = 0

    def __post_init__(self) -> None:
        """The team's Discord channels, in the guild the bot is told of when it connects."""
        for cid in DISCORD_PLACES:
            self.discord.channels.setdefault(str(cid), dp.text_channel(cid, f"team-{cid % 100}"))

    def one(self, rng: random.Random) -> None:
        n, roll = next(self.ids), rng.random()
        kind = "thread"
        for name, share in MIX:
            if roll < share:
                kind = name
                break
            roll -= share
        if (kind == "email" and self.mail is None) or (
            kind in ("reply", "burst") and not self.threads
        ):
            kind = "thread"
        getattr(self, f"_{kind}")(n, f"C{n % CHANNELS:03d}")

    def _thread(self, n: int, channel: str) -> None:
        self.ledger.note("slack thread", f"m{n}")
        ts = self.slack.post(f"{MENTION} question m{n}", channel=channel)
        self.threads.append((channel, ts))

    def _reply(self, n: int, channel: str) -> None:
        ch, ts = random.Random(n).choice(self.threads)
        self.ledger.note("slack reply", f"m{n}")
        self.slack.post(f"{MENTION} and then m{n}", channel=ch, thread_ts=ts)

    def _burst(self, n: int, channel: str) -> None:
        """Several lines in a row from one person in a thread the bot is in, no mention:
        the later ones may reach the model in the same turn (folded) or in the next."""
        ch, ts = random.Random(n).choice(self.threads)
        lines = random.Random(-n).randint(*BURST)
        for k in [n, *(next(self.ids) for _ in range(lines - 1))]:
            self.ledger.note("burst line", f"m{k}")
            self.slack.post(f"also m{k}", user="UCAROL", channel=ch, thread_ts=ts)

    def _ambient(self, n: int, channel: str) -> None:
        """Channel talk that does not address the bot: it is not routed, and owes nothing
        (an answer to its tag counts as wrong)."""
        self.ledger.note("ambient (not routed)", routed=False)
        self.slack.post(f"lunch at noon? m{n}", user="UDAVE", channel=channel)

    def _discord(self, n: int, channel: str) -> None:
        self.ledger.note("discord", f"m{n}")
        place = DISCORD_PLACES[n % len(DISCORD_PLACES)]
        self.discord.say(f"<@{dp.BOT_ID}> discord question m{n}", channel=place)

    def _worker(self, n: int, channel: str) -> None:
        self.ledger.note("worker park+resume", f"W{n}", "done")
        self.slack.post(f"{MENTION} spawn W{n}", channel=channel)

    def _approval(self, n: int, channel: str) -> None:
        self.ledger.note("approval", f"A{n}", "done")
        self.slack.post(f"{MENTION} restart A{n}", channel=channel)

    def _trigger(self, n: int, channel: str) -> None:
        self.ledger.note("trigger", f"m{n}", "fired")
        self.slack.post(f"{MENTION} remind me m{n}", channel=channel)

    def _file(self, n: int, channel: str) -> None:
        shared = self.slack.file(f"notes-{n}.log", f"filebody-m{n} disk at 91%\n".encode())
        self.ledger.note("file", f"m{n}", "read")
        self.slack.post(f"{MENTION} read this m{n}", channel=channel, subtype="file_share",
                        files=[shared])  # fmt: skip

    def _email(self, n: int, channel: str) -> None:
        assert self.mail is not None
        self.ledger.note("email", f"m{n}")
        self.mail(n)

    def due(self) -> None:
        """Answer the parked workers whose time has come; approve the calls waiting."""
        while self.answers and self.answers[0][0] <= time.monotonic():
            _, channel, ts, name = self.answers.popleft()
            self.ledger.note("worker answer")
            self.slack.post(f"{MENTION} @{name} blue", channel=channel, thread_ts=ts)
        fresh, self.seen_posts = self.slack.posts.since(self.seen_posts)
        for post in fresh:
            said = str(post.get("text"))
            if "Approval needed" in said and post.get("blocks"):
                self.approve(post)
            elif asked := ASKED.match(said):  # answered a couple of seconds later
                thread = post.get("thread_ts") or post["ts"]
                self.answers.append((time.monotonic() + 2, post["channel"], thread, asked[1]))

    def approve(self, request: dict[str, Any]) -> None:
        """Bob decides: a click on Approve, or every other time an `approve` reply."""
        if self.ledger.clicks % 2 == 0:
            self.slack.click(request, "switchboard_approve", user="UBOB")
            self.ledger.note("click")
        else:
            self.ledger.note("approve reply")
            thread = request.get("thread_ts") or request["ts"]
            self.slack.post("approve", user="UBOB", channel=request["channel"], thread_ts=thread)
        self.ledger.clicks += 1


class Answers:
    """Every (word, tag) answer the fakes recorded so far (Slack and Discord posts, mail
    the relay accepted), read on from where the last look stopped."""

    def __init__(self, slack: FakeSlack, discord: FakeDiscord, mails: Kept[Any]) -> None:
        self.slack, self.discord, self.mails = slack, discord, mails
        self.read = [0, 0, 0]
        self.found: Counter[tuple[str, str]] = Counter()

    def update(self) -> Counter[tuple[str, str]]:
        posts, self.read[0] = self.slack.posts.since(self.read[0])
        said = [str(p.get("text") or "") for p in posts]
        posts, self.read[1] = self.discord.posts.since(self.read[1])
        said += [p.content for p in posts]
        mails, self.read[2] = self.mails.since(self.read[2])
        said += [mail_body(bytes(e.original_content or b"")) for e in mails]
        for line in said:
            self.found.update(ANSWER.findall(line))
        return self.found


def mail_body(raw: bytes) -> str:
    parsed = email.message_from_bytes(raw, policy=email.policy.default)
    body = parsed.get_body(("plain",))  # type: ignore[attr-defined]
    text_part = body.get_content() if body is not None else ""
    # the reply quotes the mail it answers: only the bot's own lines count
    return "\n".join(line for line in str(text_part).splitlines() if not line.startswith(">"))


def mail_to_bot(n: int, sender: str, bot: str) -> bytes:
    msg = email.message.EmailMessage()
    msg["From"], msg["To"] = sender, bot
    msg["Subject"] = f"question m{n}"
    msg["Date"] = email.utils.formatdate()
    msg["Message-ID"] = f"<soak-{n}@client.test>"
    msg.set_content(f"Hello, question m{n}: is the build green?\n")
    return msg.as_bytes()
