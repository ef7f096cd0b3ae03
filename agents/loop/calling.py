"""One model call of an agent's step, and the room it needs: retried while the model is
unavailable (the person told once), repaired once when the API refuses the request,
closed with a note when it cannot be repaired; the conversation compacted when it
nears its token budget (after a tool-use cycle, whose thinking is bound to an unchanged
history) or when the model says its context window is full.

Functions of the agent loop (agents/loop/loop.py), which keeps the turn's logic; these
keep the model's ways of failing out of it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from agents.loop import failover, repair, turns
from agents.model.llm import LLMResponse, ModelError, ModelUnavailable
from agents.model.reasons import for_people
from bot.core.notices import CONTEXT_FULL, media_left_out, model_refused, model_unavailable
from bot.outbox.sender import backoff

if TYPE_CHECKING:
    from agents.loop.conversation import Conversation
    from agents.loop.loop import AgentLoop

log = logging.getLogger(__name__)


async def complete(node: AgentLoop, conv: Conversation, system: str) -> LLMResponse | None:
    """The model's response, or None when the API refused the request for good."""
    services = node.services
    attempt = 0
    repaired = False
    stream = services.human.progress.streamer(conv.key) if node.streams else None
    await node.between_steps()  # the request is built in a slice of its own
    while True:
        try:
            model = failover.model_for(node, conv)
            return await services.llm.complete(
                system, node.toolbox.specs, conv.messages, node.call_label(conv), stream,
                model=model,
            )  # fmt: skip
        except ModelUnavailable as exc:
            services.human.progress.restart(conv.key)  # the retry writes anew
            services.events.emit("llm.unavailable", node.agent_id, error=str(exc), attempt=attempt)
            if attempt + 1 >= failover.FAIL_OVER_AFTER and failover.fail_over(node, conv, str(exc)):
                attempt = 0  # the next model gets its own budget, the person is not told again
                continue
            if attempt == 0 and not failover.failed_over(node, conv):
                node.tell(conv, model_unavailable(for_people(str(exc))))
            limits = services.limits
            await asyncio.sleep(backoff(attempt, limits.llm_retry_base, limits.llm_retry_max))
            attempt += 1
        except ModelError as exc:
            services.events.emit("llm.error", node.agent_id, error=str(exc))
            log.warning("%s: the model's API refused a request in %s: %s",
                        node.agent_id, conv.key, exc)  # fmt: skip
            if not repaired and (
                repair.unthought_cycle(conv.messages, exc)
                or failover.foreign_thinking(conv.messages, exc)
            ):
                repaired = True  # an older version's cycle, kept without its thinking
                node.checkpoint(conv)
                continue
            if not repaired and repair.repair(conv.messages, exc):
                repaired = True  # the offending part is a note now
                node.tell(conv, media_left_out(exc))
                node.checkpoint(conv)
                continue
            node.tell(conv, model_refused(exc))
            repair.refused(conv.messages, exc)  # the next turn is not refused again
            node.checkpoint(conv)
            return None


async def fit(node: AgentLoop, conv: Conversation) -> str:
    """Compact a conversation nearing its token budget (flush, summary: agents/memory);
    the system prompt for this step, built once."""
    system = node.role.system_prompt(conv)
    memory = node.services.memory
    if memory is None or not memory.over_budget(system, node.toolbox.specs, conv.messages):
        return system
    if repair.in_tool_cycle(conv.messages):
        return system  # thinking is bound to an unchanged history: after the cycle
    conv.messages = await memory.compact(node.agent_id, conv.key, system, node.toolbox,
                                         conv.messages)  # fmt: skip
    repair.drop_thinking(conv.messages)  # its prefix changed: older thinking goes
    node.checkpoint(conv)
    return node.role.system_prompt(conv)  # the flush turn may have changed memory


async def make_room(node: AgentLoop, conv: Conversation) -> bool:
    """The context window is full (`model_context_window_exceeded`): the conversation
    compacted, else its older half left out; False (the person told, the turn closed)
    when nothing is left to cut."""
    node.services.events.emit("llm.context_full", node.agent_id, conversation=conv.key)
    before = len(conv.messages)
    memory = node.services.memory
    if memory is not None:
        conv.messages = await memory.compact(
            node.agent_id, conv.key, node.role.system_prompt(conv), node.toolbox, conv.messages
        )
    if len(conv.messages) >= before and not repair.drop_oldest(conv.messages):
        node.tell(conv, CONTEXT_FULL)
        turns.close(conv.messages, turns.FULL_NOTE)
        node.checkpoint(conv)
        return False
    repair.drop_thinking(conv.messages)
    node.checkpoint(conv)
    return True
