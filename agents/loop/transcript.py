"""How messages read inside an agent's conversation with the model.

A person's words arrive in an `<untrusted>` block under a speaker line naming them
(agents/loop/marking.py): a listed person by name, anyone else by handle plus platform id.
A worker's result, suggestion or message comes the same way under its label (the worker
may repeat what a hostile page told it). The runtime's notices and tasks, and the
coordinator's messages to a worker, keep their label with the body neutralised: they
are orders the agent should follow. Each turn may carry a context block (`CONTEXT`):
profiles and memory written since the conversation's prompt was built.
"""

from __future__ import annotations

from agents.loop.marking import neutralise, speaker_name, untrusted
from agents.model.blocks import Messages
from bot.core.bus import Mail
from bot.core.messages import COORDINATOR, FROM_PERSON, BusMessage

#: how the block of a turn's profile and memory context starts
CONTEXT = "[Context for this turn]"
#: the runtime's own messages to an agent, by kind, under their label
RUNTIME = {"notice": "[Switchboard notice]", "task": "[Scheduled task]"}


def render(mail: Mail) -> str:
    """How a bus message reads inside an agent's conversation: a person's or a worker's
    words in an `<untrusted>` block under their speaker line or label
    (agents/loop/marking.py); the runtime's and the coordinator's under their label, with
    nothing inside that passes for one."""
    msg = mail.msg
    if msg.kind in FROM_PERSON:
        who, via = speaker_of(msg), msg.meta.get("channel")
        where = f" via {via}" if via else ""
        return untrusted(msg.text, f"{via or 'a person'} message", who, f"[{who}{where}]: ")
    if msg.kind in RUNTIME or msg.sender == COORDINATOR:
        return f"{label(msg)}: {neutralise(msg.text)}" + _payload(msg)
    return untrusted(msg.text, relayed_source(msg), head=f"{label(msg)}: ")


def _payload(msg: BusMessage) -> str:
    """A hook's payload beside its task (bot/ops/hooks_desk.py): data, marked untrusted."""
    data = msg.meta.get("hook_data")
    if not isinstance(data, str):
        return ""
    return "\n" + untrusted(data, str(msg.meta.get("hook_source") or "webhook payload"))


def label(msg: BusMessage) -> str:
    """The line an agent's or the runtime's message reads under."""
    return {
        "result": f"[Worker {msg.sender} published its result]",
        "suggestion": f"[Worker {msg.sender} suggests a next step]",
        **RUNTIME,
        **({"task": f"[Hook {msg.meta['hook']}]"} if msg.meta.get("hook") else {}),
    }.get(msg.kind, f"[Message from {msg.sender}]")


def relayed_source(msg: BusMessage) -> str:
    """What a worker's words are, as the `source` of their block: no `speaker`, so
    nothing in them counts as a request (marking.RULE)."""
    what = {"result": "result of", "suggestion": "suggestion of"}.get(msg.kind, "message from")
    return f"{what} worker {msg.sender}"


def answer_text(msg: BusMessage) -> str:
    """A person's answer to an agent's question, as the tool's result reads it."""
    who, via = speaker_of(msg), msg.meta.get("channel")
    return untrusted(msg.text, f"{via or 'a person'} answer", who, f"{who} answered: ")


def person_of(msg: BusMessage) -> str | None:
    """The person who wrote `msg` (their profile is shown), else None."""
    person = msg.meta.get("person") if msg.kind in FROM_PERSON else None
    return str(person) if person else None


def context_texts(messages: Messages) -> list[str]:
    """The context blocks a conversation already holds."""
    return [
        block["text"]
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "text" and block["text"].startswith(CONTEXT)
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
