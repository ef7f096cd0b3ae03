"""System prompts: the agent's SOUL.md (seeded from `agents/souls/`), extended by
prompt parts other modules register (memory), the rule on untrusted text, then the
role's fixed instructions.

A conversation's system prompt is a snapshot: built when the conversation starts and
again after a compaction (its opening messages change), kept in the store's
key/value table beside the conversation, so it is byte-identical from turn to turn
and across restarts and the prompt cache keeps hitting. What changes per turn (the
time, who speaks and their profile, memory written since) travels in the messages
(`AgentLoop.absorb`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
from importlib import resources
from pathlib import Path
from typing import Protocol

from agents.loop.marking import RULE
from agents.model.blocks import Messages, blocks_of
from agents.services import AgentInfo, Services

log = logging.getLogger(__name__)

_KEY = "prompt:"
#: sha256 (first 16 hex digits) of every SOUL.md this project seeded before the current
#: one: a file that still equals one of them was never edited, so it is upgraded (the
#: older ones carry behavioural rules that now live in the code-owned role texts)
EARLIER_SOULS = {
    "coordinator": {"a1185a4b892b3a1b", "e14168798f328862"},
    "worker": {"1dc3f1091bdde2be", "bcda0de111f6646d"},
}
_told: set[Path] = set()  # hand-edited souls already named in the log


class Conv(Protocol):
    agent: str
    key: str
    messages: Messages
    prompt: tuple[str, str] | None


def agent_dir(data_dir: Path, agent_id: str) -> Path:
    return data_dir / "agents" / agent_id


def soul(data_dir: Path, info: AgentInfo) -> str:
    """The agent's SOUL.md (who it is, its tone), seeded from the defaults on first use
    and upgraded while it still equals an earlier default; an operator may edit it, and
    an edited one is left as it is."""
    path = agent_dir(data_dir, info.agent_id) / "SOUL.md"
    default = _default_soul(info.kind)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(default, encoding="utf-8")
        return default
    text = path.read_text(encoding="utf-8")
    if text == default:
        return text
    if _digest(text) in EARLIER_SOULS.get(info.kind, set()):
        path.write_text(default, encoding="utf-8")
        log.info("%s: SOUL.md upgraded from an earlier default", info.agent_id)
        return default
    if path not in _told:
        _told.add(path)
        log.info(
            "%s: SOUL.md is edited by hand and left as it is; the rules of how agents "
            "work live in the code's role texts, so it needs only identity and tone",
            info.agent_id,
        )
    return text


@functools.cache  # one per agent kind: the package's own file, read once
def _default_soul(kind: str) -> str:
    return resources.files("agents").joinpath(f"souls/{kind}.md").read_text("utf-8")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def build(services: Services, info: AgentInfo, role: str) -> str:
    """A fresh system prompt: nothing in it depends on who speaks or on the clock."""
    parts = [soul(services.data_dir, info)]
    parts.extend(part(info, None) for part in services.prompt_parts)
    parts += [RULE, role]
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def system_prompt(services: Services, info: AgentInfo, conv: Conv, role: str) -> str:
    """The conversation's snapshot, built now when it has none for its opening."""
    text = snapshot(services, conv)
    if text is None:
        text = build(services, info, role)
        opening = _opening(conv.messages)
        record = {"opening": opening, "system": text, "built_at": time.time()}
        services.store.set_kv(_key(conv), json.dumps(record))
        conv.prompt = (opening, text) if conv.messages else None
    return text


def snapshot(services: Services, conv: Conv) -> str | None:
    """The system prompt this conversation was built with, or None (new, compacted).
    Read from the store once per `conv`: the text for an opening is written once."""
    if not conv.messages:
        return None
    opening = _opening(conv.messages)
    if conv.prompt is not None and conv.prompt[0] == opening:
        return conv.prompt[1]
    raw = services.store.get_kv(_key(conv))
    if raw is None:
        return None
    record = json.loads(raw)
    if record.get("opening") != opening:
        return None
    conv.prompt = (opening, str(record["system"]))
    return conv.prompt[1]


def _key(conv: Conv) -> str:
    return f"{_KEY}{conv.agent}:{conv.key}"


def _opening(messages: Messages) -> str:
    """A digest of the first two blocks of the first message: they never change in a
    conversation (blocks are only appended) and a compaction replaces them."""
    if not messages:
        return ""
    blocks = blocks_of(messages[0]["content"])[:2]
    return hashlib.sha256(json.dumps(blocks, sort_keys=True).encode()).hexdigest()[:32]
