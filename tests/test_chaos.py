"""Chaos: `switchboard run` on Slack, Discord and email, killed with SIGKILL at random
moments from a printed seed while people talk to it; nothing may be lost, repeated or
answered in the wrong thread, and a parked worker's question is asked once and its
result delivered once (the harness: tests/chaos.py).

CI runs a few kills; locally: `pytest tests/test_chaos.py --kills 20 --seed 1234 -s`.
A failure prints the seed: the same seed replays the same workload and kill moments
(the moments the processes reach differ from run to run, so replay is close, not exact).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.chaos import World, respond, run_chaos, world_env
from tests.email.conftest import dovecot, tls_material  # noqa: F401
from tests.email.person import Person
from tests.email.servers import Dovecot, RelayHandler, SmtpRelay
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlack


@pytest.mark.chaos
async def test_repeated_kill_9_loses_repeats_and_misroutes_nothing(
    tmp_path: Path,
    dovecot: Dovecot,  # noqa: F811
    fake: FakeAnthropic,
    request: pytest.FixtureRequest,
) -> None:
    kills = int(request.config.getoption("--kills"))
    seed = request.config.getoption("--seed")
    seed = int(seed) if seed is not None else random.randrange(1_000_000)
    print(f"\nchaos: seed={seed} kills={kills}")  # replay with --seed
    fake.responder = respond
    handler = RelayHandler(dovecot)
    relay = await SmtpRelay(handler).start()
    bot_address = f"chaos{os.getpid()}x{seed}@localhost"
    ann = Person(f"ann{os.getpid()}x{seed}@localhost", dovecot, relay.port)
    try:
        with FakeSlack() as slack, FakeDiscord() as discord:
            mail_env = dovecot.env(bot_address, relay.port, ann.address)
            world = World(
                slack, discord, fake, ann, bot_address,
                world_env(slack, discord, fake, mail_env), tmp_path,
            )  # fmt: skip
            result = await run_chaos(world, seed, kills, messages=max(14, 3 * kills))
    finally:
        await relay.stop()
    print(f"chaos: seed={seed} kills={kills} {result.line()}")
    if not result.ok:
        print("\n".join(result.timeline))
    assert result.ok, f"seed={seed}: {result.line()}"
