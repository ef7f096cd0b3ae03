"""System prompts: the agent's SOUL.md (seeded from `agents/souls/`), extended by
prompt parts other modules register (memory), then the role's fixed instructions.

The result depends only on files and the speaking person, so it is byte-identical
between turns while nothing changed: the prompt cache keeps hitting.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from agents.services import AgentInfo, Services


def agent_dir(data_dir: Path, agent_id: str) -> Path:
    return data_dir / "agents" / agent_id


def soul(data_dir: Path, info: AgentInfo) -> str:
    """The agent's SOUL.md, seeded from the defaults on first use; an operator may edit it."""
    path = agent_dir(data_dir, info.agent_id) / "SOUL.md"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        default = resources.files("agents").joinpath(f"souls/{info.kind}.md").read_text("utf-8")
        path.write_text(default, encoding="utf-8")
    return path.read_text(encoding="utf-8")


def system_prompt(services: Services, info: AgentInfo, person: str | None, role: str) -> str:
    parts = [soul(services.data_dir, info)]
    parts.extend(part(info, person) for part in services.prompt_parts)
    parts.append(role)
    return "\n\n".join(p.strip() for p in parts if p and p.strip())
