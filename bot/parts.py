"""The parts the composition root builds from the settings alone: the model client and
the agents' limits and policies (bot/app.py wires them)."""

from __future__ import annotations

from pydantic import SecretStr

from agents.model.attachments import Expander
from agents.model.llm import Gate, Provider
from agents.model.providers import Connector, Endpoints
from agents.services import Limits
from agents.tools.egress import EgressPolicy, sends_matcher
from agents.tools.web_fetch import FetchLimits
from config.models import ROLES
from config.settings import Settings


def connector(settings: Settings) -> Connector:
    """The model providers' backends, each made (its SDK imported) at its first use."""

    def secret(value: SecretStr | None) -> str | None:
        return value.get_secret_value() if value else None

    return Connector(
        Endpoints(
            secret(settings.anthropic_api_key),
            settings.anthropic_base_url,
            secret(settings.openai_api_key),
            settings.openai_base_url,
            settings.cloud_ml_region,
            settings.anthropic_vertex_project_id,
            settings.anthropic_vertex_base_url,
            settings.aws_region,
            settings.anthropic_bedrock_base_url,
        )
    )


def provider(settings: Settings, gate: Gate) -> Provider:
    """The model client: each role's model and effort, the fallbacks, saved files expanded,
    each call waiting at `gate` first (the daily budget)."""
    s = settings
    return Provider(
        connector(s),
        s.model,
        s.max_tokens,
        s.max_llm_calls,
        efforts={role: s.effort_of(role) for role in ROLES},
        models={role: s.model_of(role) for role in ROLES},
        fallbacks=s.model_fallback,
        expander=Expander(s.data_dir),
        gate=gate,
    )


def limits(s: Settings) -> Limits:
    return Limits(
        s.max_workers,
        s.max_turns,
        s.llm_retry_base_seconds,
        s.llm_retry_max_seconds,
        file_max_bytes=s.file_max_bytes,
    )


def egress_policy(s: Settings) -> EgressPolicy:
    return EgressPolicy(
        tuple(s.web_allow),
        sends_matcher([(m.name, m.sends, m.approval) for m in s.mcp_servers]),
    )


def fetch_limits(s: Settings) -> FetchLimits:
    return FetchLimits(
        frozenset(h.lower() for h in s.fetch_allow_hosts),
        s.fetch_max_bytes,
        s.fetch_timeout_seconds,
        s.tool_result_max_chars,
        str(s.ssl_cert_file) if s.ssl_cert_file else None,
    )
