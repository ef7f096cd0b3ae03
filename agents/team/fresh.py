"""`new` / `/new`: the coordinator starts a fresh conversation in that place.

The conversation's transcript is archived (where memory_search finds archives, as
compaction leaves them) and emptied; its delivery target stays, and memory is not
touched. The fresh start waits for the turn under way in that conversation, and the
messages after `new` wait for the fresh start, so nothing lands in the wrong
transcript. A parked worker of the conversation keeps its origin: its question stays
open and its result comes back here; the answer to `new` says so.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from agents.model.blocks import stored
from bot.core.bus import Mail
from bot.core.messages import COORDINATOR, Outbound
from bot.core.notices import SYSTEM_SPEAKER, fresh_start, where_to

if TYPE_CHECKING:
    from agents.services import Services

log = logging.getLogger(__name__)


async def start_afresh(
    services: Services, key: str, mail: Mail, prior: asyncio.Task[None] | None
) -> None:
    """Archive and empty the coordinator's conversation `key`, answer the `new`."""
    if prior is not None:
        await asyncio.gather(prior, return_exceptions=True)  # the turn under way ends first
    store = services.store
    messages, target = store.agents.load_conversation(COORDINATOR, key)
    archived = bool(messages) and services.memory is not None
    if archived and services.memory is not None:
        await asyncio.to_thread(services.memory.archive, COORDINATOR, key, stored(messages))
    parked = [w.name for w in store.agents.workers(("parked",)) if w.origin_conversation == key]
    place = where_to(mail.msg.meta.get("reply_to"), target, home=services.home)
    with store.tx():
        store.agents.save_conversation(COORDINATOR, key, [], target)
        store.consume_mail([mail.id])
        if place is not None:
            services.human.say(
                Outbound(SYSTEM_SPEAKER, place, fresh_start(archived, parked), key, kind="notice")
            )
    services.events.emit(
        "conversation.fresh", COORDINATOR, conversation=key, archived=archived,
        messages=len(messages), parked=parked,
    )  # fmt: skip
