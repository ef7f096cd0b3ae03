"""Benchmark: the chaos run with 20 SIGKILLs, over 5 seeds (issue 13).

`switchboard run` on Slack (fake), Discord (fake) and email (a real dovecot + aiosmtpd
relay), killed at random moments while a seeded workload talks to it on every
channel (tests/kits/chaos.py). Prints, per seed, lost / duplicated / wrong-thread counts,
whether the worker's question was asked once and its result delivered once, and how
many mails SMTP was handed twice under one Message-ID. Target: 0 / 0 / 0 every seed.

    .venv/bin/python tests/bench/bench_chaos.py [--kills 20] [--seeds 1,2,3,4,5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.email.person import Person
from tests.email.servers import Dovecot, RelayHandler, SmtpRelay, make_ca
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlack
from tests.kits.chaos import World, respond, run_chaos, world_env


async def one(dovecot: Dovecot, seed: int, kills: int) -> bool:
    relay = await SmtpRelay(RelayHandler(dovecot)).start()
    bot = f"bench{os.getpid()}s{seed}@localhost"
    ann = Person(f"ann{os.getpid()}s{seed}@localhost", dovecot, relay.port)
    started = time.monotonic()
    try:
        with FakeSlack() as slack, FakeDiscord() as discord, FakeAnthropic(respond) as fake:
            env = world_env(slack, discord, fake, dovecot.env(bot, relay.port, ann.address))
            world = World(slack, discord, fake, ann, bot, env, Path(tempfile.mkdtemp()))
            result = await run_chaos(world, seed, kills, messages=3 * kills)
    finally:
        await relay.stop()
    took = time.monotonic() - started
    print(f"seed {seed}: {kills} kills, {3 * kills} messages, {took:.0f} s: {result.line()}")
    return result.ok


async def main(kills: int, seeds: list[int]) -> None:
    dovecot = Dovecot(*make_ca())
    dovecot.start()
    try:
        results = [await one(dovecot, seed, kills) for seed in seeds]
    finally:
        dovecot.cleanup()
    print(
        f"chaos over {len(seeds)} seeds with {kills} kills each: {sum(results)} clean "
        f"(target 0 lost / 0 duplicated / 0 wrong thread on every seed: "
        f"{'met' if all(results) else 'NOT met'})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seeds", default="1,2,3,4,5")
    args = parser.parse_args()
    asyncio.run(main(args.kills, [int(s) for s in args.seeds.split(",")]))
