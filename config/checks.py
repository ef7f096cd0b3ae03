"""Checks across settings, run once all fields are read: a channel configured in full,
an operator surface safe to serve."""

from __future__ import annotations

import importlib.util
import ipaddress
from typing import TYPE_CHECKING

from pydantic import SecretStr

from config.callers import MIN_TOKEN_CHARS, api_callers, api_targets
from config.email_auth import check_email_auth
from config.models import MODEL_VARIABLES, ROLES, provider_of
from config.sources import FieldProblem

if TYPE_CHECKING:
    from config.settings import Settings


def check_channels(s: Settings) -> None:
    """A configured channel has every setting it needs."""
    if s.slack_bot_token and not (s.slack_app_token or s.slack_signing_secret):
        raise FieldProblem(
            "slack_app_token",
            "is not set: with SLACK_BOT_TOKEN, set SLACK_APP_TOKEN (Socket Mode, xapp-...) "
            "or SLACK_SIGNING_SECRET (HTTP Events)",
        )
    if (s.slack_app_token or s.slack_signing_secret) and not s.slack_bot_token:
        raise FieldProblem("slack_bot_token", "is required when Slack is configured")
    if s.slack_bot_token and not _secret(s.slack_bot_token).startswith("xoxb-"):
        raise FieldProblem(
            "slack_bot_token",
            "must be the app's bot token (xoxb-..., under OAuth & Permissions)",
        )
    if s.slack_app_token and not _secret(s.slack_app_token).startswith("xapp-"):
        raise FieldProblem(
            "slack_app_token",
            "must be an app-level token (xapp-..., under Basic Information,"
            " with the connections:write scope)",
        )
    if s.email_address:
        for name in ("imap_host", "smtp_host"):
            if not getattr(s, name):
                raise FieldProblem(name, "is required when EMAIL_ADDRESS is set")
        check_email_auth(s)


def check_operator(s: Settings) -> None:
    """The operator surface is safe to serve: a dashboard token where the network can
    reach it, well-formed API callers, a price for the budget's model."""
    token = _secret(s.dashboard_token) if s.dashboard_token else ""
    if s.dashboard_token is not None and len(token) < MIN_TOKEN_CHARS:
        raise FieldProblem(
            "dashboard_token",
            f"must be at least {MIN_TOKEN_CHARS} characters (e.g. openssl rand -hex 24)",
        )
    if s.serves_http and not token and not is_loopback(s.http_host):
        raise FieldProblem(
            "dashboard_token",
            f"is required when SWITCHBOARD_HTTP_HOST ({s.http_host}) is not a loopback "
            "address: the dashboard must not be open to the network",
        )
    if s.api_token is not None:
        callers = set(api_callers(_secret(s.api_token)).values())  # raises naming api_token
        api_targets(s.api_targets, callers)  # raises FieldProblem naming api_targets
    if s.daily_budget_usd is None:
        return
    for role in ROLES:
        model, variable = s.model_of(role), MODEL_VARIABLES[role]
        if s.price(model) is None:
            raise FieldProblem(
                "daily_budget_usd",
                f"needs a price for {variable} {model!r}: add "
                f'[prices."{model}"] input = ... output = ... (USD per million tokens) '
                "to the config file",
            )


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost: reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _secret(value: SecretStr) -> str:
    return value.get_secret_value().strip()


def llm_problem(s: Settings) -> str | None:
    """What keeps the configured models from being called, in one line naming the
    variable: a provider's key or base URL, or its SDK not installed."""
    providers = {provider_of(m) for m in s.models_in_use()}
    if "anthropic" in providers and s.anthropic_api_key is None and s.anthropic_base_url is None:
        return (
            "ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=sk-ant-... "
            "(or point ANTHROPIC_BASE_URL at an Anthropic-compatible server)."
        )
    problem = _vertex_problem(s) if "vertex" in providers else None
    problem = problem or (_bedrock_problem(s) if "bedrock" in providers else None)
    if problem:
        return problem
    if "openai" not in providers:
        return None
    if s.openai_api_key is None and s.openai_base_url is None:
        return (
            "OPENAI_API_KEY is not set: an openai: model needs OPENAI_API_KEY (and "
            "OPENAI_BASE_URL for a server other than OpenAI's)."
        )
    if importlib.util.find_spec("openai") is None:
        return (
            "SWITCHBOARD_MODEL names an openai: model but the openai SDK is not installed: "
            "pip install 'switchboard[openai]'."
        )
    return None


def _vertex_problem(s: Settings) -> str | None:
    if not s.cloud_ml_region:
        return (
            "CLOUD_ML_REGION is not set: a vertex: model needs its Vertex AI region "
            "(e.g. us-east5, or global), and ANTHROPIC_VERTEX_PROJECT_ID."
        )
    if importlib.util.find_spec("google.auth") is None:
        return "a vertex: model needs Google's auth library: pip install 'switchboard[vertex]'."
    return None


def _bedrock_problem(s: Settings) -> str | None:
    if not s.aws_region:
        return "AWS_REGION is not set: a bedrock: model needs its region (e.g. us-east-1)."
    if importlib.util.find_spec("boto3") is None:
        return "a bedrock: model needs the AWS SDK: pip install 'switchboard[bedrock]'."
    return None
