"""How messages read inside an agent's conversation with the model.

A person's words arrive in an `<untrusted>` block under a speaker line naming them
(agents/loop/marking.py): a listed person by name, anyone else by handle plus platform id.
The runtime's and the agents' own messages keep their labels, their bodies
neutralised so nothing inside passes for one. Each turn may carry a context block
(`CONTEXT`): profiles and memory written since the conversation's prompt was built.
"""

from __future__ import annotations

from typing import Any

from agents.loop.marking import neutralise, speaker_name, untrusted
from bot.core.bus import Mail
from bot.core.messages import FROM_PERSON, BusMessage

#: how the block of a turn's profile and memory context starts
CONTEXT = "[Context for this turn]"


def render(mail: Mail) -> str:
    """How a bus message reads inside an agent's conversation: a person's words in an
    `<untrusted>` block under a speaker line (agents/loop/marking.py); the runtime's and the
    agents' own messages under their label, with nothing inside that passes for one."""
    msg = mail.msg
    if msg.kind in FROM_PERSON:
        who, via = speaker_of(msg), msg.meta.get("channel")
        where = f" via {via}" if via else ""
        return untrusted(msg.text, f"{via or 'a person'} message", who, f"[{who}{where}]: ")
    label = {
        "result": f"[Worker {msg.sender} published its result]",
        "suggestion": f"[Worker {msg.sender} suggests a next step]",
        "notice": "[Switchboard notice]",
        "task": "[Scheduled task]",
    }.get(msg.kind, f"[Message from {msg.sender}]")
    return f"{label}: {neutralise(msg.text)}"


def answer_text(msg: BusMessage) -> str:
    """A person's answer to an agent's question, as the tool's result reads it."""
    who, via = speaker_of(msg), msg.meta.get("channel")
    return untrusted(msg.text, f"{via or 'a person'} answer", who, f"{who} answered: ")


def person_of(msg: BusMessage) -> str | None:
    """The person who wrote `msg` (their profile is shown), else None."""
    person = msg.meta.get("person") if msg.kind in FROM_PERSON else None
    return str(person) if person else None


def context_texts(messages: list[dict[str, Any]]) -> list[str]:
    """The context blocks a conversation already holds."""
    return [
        block["text"]
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "text" and block.get("text", "").startswith(CONTEXT)
    ]


def speaker_of(msg: BusMessage) -> str:
    """A listed person by their name; anyone else by platform handle plus id, so an
    unlisted sender who calls themselves `Ann` never reads as Ann."""
    meta = msg.meta
    person, ident = meta.get("person"), meta.get("sender_id")
    display = str(meta.get("sender") or person or msg.sender)
    if not ident or (person and person != ident):
        return speaker_name(display)
    same = display.casefold() == str(ident).casefold()  # the handle is the id itself
    return speaker_name(display if same else f"{display} ({ident})")
