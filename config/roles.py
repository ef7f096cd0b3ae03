"""The model settings of each role: which model, and how much it thinks.

The coordinator's are `SWITCHBOARD_MODEL` and `SWITCHBOARD_EFFORT`; workers and the
background (compaction's summaries, memory upkeep) have their own, which default to
the coordinator's model and to SWITCHBOARD_EFFORT, else to the role's default effort
(config/models.py DEFAULT_EFFORT). `Settings` (config/settings.py) takes these fields.
Imports nothing of the project but config.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from config.models import DEFAULT_EFFORT, Effort, Role, model_name


class RoleSettings(BaseModel):
    #: `provider:model`; a bare name is Anthropic's (or the server's at ANTHROPIC_BASE_URL)
    model: str = "claude-sonnet-5"
    model_workers: str | None = None
    model_background: str | None = None
    # thinking and the answer share it; every call streams, so any value up to the
    # model's output limit works (a larger one is cut to that limit)
    max_tokens: int = Field(default=32_000, ge=256)
    effort: Effort | None = None
    effort_workers: Effort | None = None
    effort_background: Effort | None = None
    #: `provider:model` list: where a turn goes on when the model stays unavailable
    model_fallback: list[str] = Field(default_factory=list)

    @field_validator("model", "model_workers", "model_background")
    @classmethod
    def _provider(cls, value: str | None) -> str | None:
        return None if value is None else model_name(value)

    @field_validator("model_fallback", mode="before")
    @classmethod
    def _fallbacks(cls, value: object) -> object:
        if isinstance(value, str):
            value = [v for v in (p.strip() for p in value.split(",")) if v]
        return [model_name(v) for v in value] if isinstance(value, list) else value

    def models_in_use(self) -> set[str]:
        """Every model a call may go to: each role's and the fallbacks."""
        return {self.model_of(r) for r in ("coordinator", "workers", "background")} | set(
            self.model_fallback
        )

    def model_of(self, role: Role) -> str:
        """A role's model: its own setting, else SWITCHBOARD_MODEL."""
        own = {"workers": self.model_workers, "background": self.model_background}
        return own.get(role) or self.model

    def effort_of(self, role: Role) -> Effort:
        """A role's effort: its own setting, else SWITCHBOARD_EFFORT, else its default."""
        own = {"workers": self.effort_workers, "background": self.effort_background}
        return own.get(role) or self.effort or DEFAULT_EFFORT[role]
