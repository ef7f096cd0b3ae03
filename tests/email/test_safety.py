"""Mail no one should answer is refused: recorded as an event, never shown to a model."""

from __future__ import annotations

from pathlib import Path

from tests.email.conftest import MailWorld, email_app
from tests.email.person import Person
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.kits.app_kit import events


async def test_machine_mail_and_strangers_are_refused_and_never_answered(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    fake.responder = lambda call: [text("answered")]
    ann, bot = world.ann, world.bot
    stranger = world.person("eve")
    own = Person(bot, world.dovecot, world.relay.port)
    daemon = world.person("mailer-daemon")
    cases = [
        (stranger.compose(bot, "hi", "let me in"), None, "sender not allowed"),
        (
            ann.compose(
                bot, "Out of office", "I am away", headers={"Auto-Submitted": "auto-replied"}
            ),
            None,
            "auto-submitted",
        ),
        (ann.compose(bot, "Away", "away", headers={"X-Autoreply": "yes"}), None, "auto-reply"),
        (daemon.compose(bot, "Undelivered Mail", "bounced"), "", "bounce"),
        (
            ann.compose(bot, "[list] news", "digest", headers={"List-Id": "<news.example.com>"}),
            None,
            "mailing list",
        ),
        (ann.compose(bot, "offer", "buy", headers={"Precedence": "bulk"}), None, "bulk"),
        (own.compose(bot, "me", "talking to myself"), None, "own address"),
        (ann.compose(bot, "Re: x", "echo", headers={"X-Loop": bot}), None, "loop"),
    ]
    async with email_app(world.settings(tmp_path, fake)):
        for mail, envelope_from, _ in cases:
            await (ann if envelope_from is None else daemon).send(mail, envelope_from)
        # a person's mail after them all is answered: the refusals were handled before it
        await ann.send(ann.compose(bot, "real", "a real question"))
        await ann.wait_mail(1, match="answered")
    # matched by subject: IMAP orders mail by UID, and dovecot may number two mails
    # delivered within the same second in either order
    refused = {
        e["data"]["subject"]: e["data"]["reason"] for e in events(tmp_path, "message.refused")
    }
    assert len(refused) == len(cases)
    for mail, _, expected in cases:
        assert expected in refused[str(mail["Subject"])]
    assert len(fake.calls) == 1 and "a real question" in fake.calls[0].last_text
    assert [env.rcpt_tos for env in world.handler.accepted] == [[ann.address]]
    assert len(events(tmp_path, "message.received")) == 1
