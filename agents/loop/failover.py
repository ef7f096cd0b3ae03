"""Failover (SWITCHBOARD_MODEL_FALLBACK): when the model stays unavailable past its
retry budget, the turn goes on with the next model of the list, and stays on it until
the turn ends; the next turn starts on the role's own model again. A model that
declines (`stop_reason: refusal`: Anthropic's docs say the same request usually gets
an answer from another model) moves the turn too, once: a turn that already moved
declines as it would without a fallback.

Thinking is bound to the model that wrote it (a signed block another model refuses,
and no other API reads): the conversation's thinking blocks are dropped when the turn
moves to another model, and again when a later turn goes back from it. A move between
two endpoints of the same model keeps them. Each move is an `llm.failover` event
(counted by the metrics). Functions of agents/loop/calling.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.loop import turns
from agents.model.blocks import THINKING, Blocks, Messages
from agents.model.llm import role_of
from agents.model.providers import split
from agents.model.providers.base import StopDetails

if TYPE_CHECKING:
    from agents.loop.conversation import Conversation
    from agents.loop.loop import AgentLoop

#: failed attempts on one model (each after the SDK's own retries) before the next
FAIL_OVER_AFTER = 3


def model_for(node: AgentLoop, conv: Conversation) -> str | None:
    """The fallback this turn runs on, else None (the role's model). A new turn after a
    failover starts on the role's model, without the fallback's thinking."""
    moved = node.services.llm.failed_over
    key = (node.agent_id, conv.key)
    if key not in moved:
        return None
    start, model = moved[key]
    if start == turns.turn_start(conv.messages):
        return model
    del moved[key]
    if _bare(_primary(node, conv)) != _bare(model):
        _forget_thinking(conv.messages)
    return None


def failed_over(node: AgentLoop, conv: Conversation) -> bool:
    return (node.agent_id, conv.key) in node.services.llm.failed_over


def after_refusal(node: AgentLoop, conv: Conversation, details: StopDetails | None) -> bool:
    """The model declined: the same request goes to the next model, once per turn; False
    when the turn already moved or no fallback is left (the turn declines)."""
    if failed_over(node, conv):
        return False
    category = (details or {}).get("category") or "none given"
    if not fail_over(node, conv, f"declined (category {category})", reason="refusal"):
        return False
    node.services.human.progress.restart(conv.key)  # what it streamed is not the answer
    return True


def fail_over(node: AgentLoop, conv: Conversation, error: str, reason: str = "unavailable") -> bool:
    """Move this turn to the next model of the fallback list; False when none is left."""
    llm = node.services.llm
    primary = _primary(node, conv)
    current = model_for(node, conv) or primary
    chain = [primary, *llm.fallbacks]
    following = chain[chain.index(current) + 1 :] if current in chain else []
    if not following:
        return False
    model = following[0]
    llm.failed_over.put(  # newest last: the oldest leave first (FAILED_OVER_MAX)
        (node.agent_id, conv.key), (turns.turn_start(conv.messages), model)
    )
    if _bare(model) != _bare(current):
        _forget_thinking(conv.messages)
    node.services.events.emit(
        "llm.failover", node.agent_id, conversation=conv.key, error=error[:300],
        model=model, previous=current, reason=reason,
    )  # fmt: skip
    node.checkpoint(conv)
    return True


def foreign_thinking(messages: Messages, exc: Exception) -> bool:
    """The API refused a thinking block another model wrote (a turn on a fallback, then
    a restart): every thinking block is left out, and whether that was the cause."""
    if "signature" not in str(exc) or "thinking" not in str(exc):
        return False
    _forget_thinking(messages)
    return True


def _primary(node: AgentLoop, conv: Conversation) -> str:
    return node.services.llm.models[role_of(node.call_label(conv), False)]


def _bare(model: str) -> str:
    """The model's own name, whichever provider serves it."""
    return split(model)[1].partition("@")[0]


def _forget_thinking(messages: Messages) -> None:
    """Every thinking block out, the current tool-use cycle's too (another model would
    refuse it; a cycle left without thinking is repaired by repair.unthought_cycle)."""
    for message in messages:
        if message["role"] != "assistant" or isinstance(message["content"], str):
            continue
        kept: Blocks = [b for b in message["content"] if b["type"] not in THINKING]
        if kept:
            message["content"] = kept
