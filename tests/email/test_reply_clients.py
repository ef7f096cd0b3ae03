"""A parked worker resumes with exactly the person's words, whatever client wrote the reply.

The real app, a real dovecot: the worker asks by email, the person answers the way a
German Outlook or a bottom-posting Gmail user does, or types inside the quote as Apple
Mail lets them, and the worker is handed the answer alone (no quote header, no
separator, no sign-off; the quoted question only as the context of an answer below it).
"""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

import pytest

from tests.email.conftest import MailWorld, email_app
from tests.email.person import body_text
from tests.fakes.anthropic_api import FakeAnthropic, unwrap
from tests.kits.script import TeamScript


def german_outlook(question: EmailMessage, bot: str) -> str:
    return (
        "Nur Rechenzentrum, bitte.\n\nMit freundlichen Grüßen\nAnn\n\n"
        "-----Ursprüngliche Nachricht-----\n"
        f"Von: Alice (Switchboard) <{bot}>\nGesendet: Montag, 1. Januar 2024 10:00\n"
        f"An: Ann\nBetreff: {question['Subject']}\n\n{body_text(question)}\n"
    )


def gmail_bottom_post(question: EmailMessage, bot: str) -> str:
    quoted = "\n".join(f"> {line}" for line in body_text(question).splitlines())
    return (
        "Hi Alice,\n\nOn Mon, Jan 1, 2024 at 10:00\u202fAM Alice (Switchboard) <\n"
        f"{bot}> wrote:\n\n{quoted}\n\nData center only, please.\n"
    )


def apple_inside_the_quote(question: EmailMessage, bot: str) -> str:
    """Typed inside the quoted question (a blockquote the client did not break out of)."""
    quoted = "\n".join(f"> {line}" for line in body_text(question).splitlines())
    return (
        f"Hi Alice,\n\nOn 1 Jan 2024, at 10:00, Alice (Switchboard) <{bot}> wrote:\n\n"
        f"{quoted}\n>\n> Data center only, please.\n"
    )


ANSWERED = " answered: "  # how the worker is handed the answer
CLIENTS = {
    "german outlook": (german_outlook, "Nur Rechenzentrum, bitte."),
    # inside the quote of the question: found by knowing the question mail
    "apple inside the quote": (
        apple_inside_the_quote,
        "Hi Alice,\n\n> Data center or consumer GPUs?\nData center only, please.",
    ),
    # below the quoted question: the question it answers is shown above it
    "gmail bottom post": (
        gmail_bottom_post,
        "Hi Alice,\n\n> Data center or consumer GPUs?\nData center only, please.",
    ),
}


@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_a_parked_worker_resumes_with_exactly_the_persons_words(
    client: str, tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    write, words = CLIENTS[client]
    ann = world.ann
    script = TeamScript(via=f"email:{ann.address}")
    fake.responder = script
    async with email_app(world.settings(tmp_path, fake)) as app:
        await ann.send(ann.compose(world.bot, "GPU research", "please research GPUs for us"))
        (question,) = await ann.wait_mail(1, match="asks")
        subject = f"Re: {question['Subject']}"
        answer = ann.compose(world.bot, subject, write(question, world.bot), reply_to=question)
        await ann.send(answer)
        await ann.wait_mail(1, match="Report based on")
        assert app.store.agents.open_questions() == []
    (seen,) = [c.last_text for c in fake.calls if c.agent == "Alice" and ANSWERED in c.last_text]
    assert unwrap(seen.split(ANSWERED, 1)[1]) == words
