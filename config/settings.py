"""Settings: the TOML file first, then the environment (the environment wins).

This module imports nothing of the project outside `config/` (its entries, sources,
targets, prices and tools modules). It is read once, at the entry point; everything
else receives the validated `Settings` object.

Every field has exactly one environment variable (`config.sources.env_name`). Core fields use the
`SWITCHBOARD_` prefix; platform fields keep the platform's conventional names
(`SLACK_BOT_TOKEN`, `IMAP_HOST`, ...). In the TOML file a field is written either
flat (`slack_bot_token = ...`) or in its section (`[slack]` / `bot_token = ...`).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from croniter import croniter
from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from config import sources
from config.checks import check_channels, check_operator, llm_problem
from config.email_auth import EmailAuthSettings
from config.email_settings import EmailSettings
from config.entries import (
    HeartbeatConfig,
    PersonConfig,
    ScheduleConfig,
    check_people,
    check_target,
    check_zone,
    duration,
    expand_names,
    split_csv,
)
from config.hooks import HookConfig, fill_secrets, unique_hooks
from config.mail import hops, settle
from config.models import DEFAULT_PRICES
from config.prices import ModelPrice, price_of
from config.retention import RetentionSettings
from config.roles import RoleSettings
from config.sources import FieldProblem, default_config_path, from_environ, one_line
from config.tools import McpServerConfig, MissingVariable, interpolate, unique_servers

#: where the store lives: the SQLite file in the data dir, or a PostgreSQL URL
Database = Path | str
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(where: Database) -> bool:
    return isinstance(where, str) and where.startswith(POSTGRES_SCHEMES)


class SettingsError(Exception):
    """A setting is missing or malformed; the message is one line naming the variable."""


class Settings(RoleSettings, EmailSettings, EmailAuthSettings, RetentionSettings, BaseSettings):
    """Every setting of Switchboard, validated once at start."""

    model_config = SettingsConfigDict(extra="ignore", validate_default=True)

    # LLM
    anthropic_api_key: SecretStr | None = None
    anthropic_base_url: str | None = None
    openai_api_key: SecretStr | None = None  # for `openai:` models (docs/models.md)
    openai_base_url: str | None = None
    cloud_ml_region: str | None = None  # `vertex:` models, with ANTHROPIC_VERTEX_PROJECT_ID
    anthropic_vertex_project_id: str | None = None
    anthropic_vertex_base_url: str | None = None
    aws_region: str | None = None  # `bedrock:` models; ANTHROPIC_BEDROCK_BASE_URL in tests
    anthropic_bedrock_base_url: str | None = None
    # the model, max_tokens and effort of each role: config/roles.py
    max_llm_calls: int = Field(default=8, ge=1)
    llm_retry_base_seconds: float = Field(default=2.0, gt=0)
    llm_retry_max_seconds: float = Field(default=300.0, gt=0)

    # Core
    data_dir: Path = Path("./var")
    home: str | None = None
    timezone: str = "UTC"
    max_workers: int = Field(default=8, ge=1)
    max_turns: int = Field(default=40, ge=1)
    outbox_retry_base_seconds: float = Field(default=1.0, gt=0)
    http_port: int | None = Field(default=None, ge=1, le=65535)
    http_host: str = "127.0.0.1"
    port: int | None = Field(default=None, ge=1, le=65535)

    # Several nodes (docs/operations.md): every table in PostgreSQL, one
    # leader at a time, its lease lost after this long without renewing
    database_url: SecretStr | None = None
    leader_ttl_seconds: float = Field(default=5.0, ge=1, le=300)
    node_id: str | None = Field(default=None, min_length=1, max_length=100)

    # Operator surface (bot/ops): dashboard login, LLM prices and the daily budget
    dashboard_token: SecretStr | None = None
    #: `name:token` pairs, comma-separated (a bare token is the caller `api`): the HTTP
    #: API's callers, each one speaking as `api:<name>`; unset: the API is off
    api_token: SecretStr | None = None
    #: `name:target` pairs, comma-separated: the places besides its own `api:<name>/...`
    #: conversations a caller may post into (config/callers.py); empty: none
    api_targets: list[str] = Field(default_factory=list)
    #: the dashboard's session cookie is `Secure` (HTTPS only): set it behind TLS
    cookie_secure: bool = False
    #: `/healthz` and `/metrics` answer without the dashboard token (never with error
    #: texts or spend); false: they ask for it when one is set
    metrics_public: bool = True
    #: an open question or pending approval is reminded in its thread after this, then
    #: daily, and escalated once to SWITCHBOARD_HOME after a day (`4h`, `30m`, seconds)
    remind_after: float = 4 * 3600.0
    #: a running worker with no tool call and no model answer for this long is reported
    stuck_after: float = 15 * 60.0
    daily_budget_usd: float | None = Field(default=None, gt=0)
    # the share of it at which the home target is told what will wait (once a day)
    budget_warn_at: float = Field(default=0.8, gt=0, lt=1)
    prices: dict[str, ModelPrice] = Field(default_factory=dict)

    # Memory (agents/memory): token figures are estimates at 4 characters per token
    compact_at_tokens: int = Field(default=24_000, ge=1_000)
    compact_keep_tokens: int = Field(default=6_000, ge=200)
    memory_prompt_tokens: int = Field(default=4_000, ge=200)
    memory_file_max_bytes: int = Field(default=262_144, ge=1_024)
    memory_inline_bytes: int = Field(default=20_000, ge=0)
    memory_rescan_seconds: float = Field(default=2.0, ge=0)
    memory_search: Literal["hybrid", "keywords"] = "hybrid"

    # Files people send and agents write (bot/inbox/files.py, agents/tools/files.py)
    file_max_bytes: int = Field(default=20_000_000, ge=1_024)

    # Slack
    slack_bot_token: SecretStr | None = None
    slack_app_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_api_url: str = "https://slack.com/api/"
    slack_allowed_users: list[str] = Field(default_factory=list)
    slack_pace_seconds: float = Field(default=1.0, ge=0)

    # Discord
    discord_bot_token: SecretStr | None = None
    discord_api_url: str = "https://discord.com/api/v10"
    discord_gateway_url: str | None = None
    discord_allowed_users: list[str] = Field(default_factory=list)
    discord_allowed_channels: list[str] = Field(default_factory=list)

    # Nightly distillation of daily logs into MEMORY.md (cron, in `timezone`); off: never
    memory_distil_cron: str = "30 3 * * *"
    memory_distil: bool = True

    # People (config file only): one person across channels; and the nightly
    # consolidation of conversations into team knowledge (cron, in `timezone`)
    people: list[PersonConfig] = Field(default_factory=list)
    consolidate_cron: str = "0 3 * * *"
    consolidate: bool = True

    # Triggers (config file only, but the minimum interval)
    schedules: list[ScheduleConfig] = Field(default_factory=list)
    heartbeat: HeartbeatConfig | None = None
    trigger_min_interval_seconds: float = Field(default=60.0, gt=0)

    # Tools that act (config/tools.py; docs/tools.md)
    mcp_servers: list[McpServerConfig] = Field(default_factory=list)
    # Signed inbound webhooks (config/hooks.py; docs/hooks.md): POST /hooks/<name>
    hooks: list[HookConfig] = Field(default_factory=list)
    approvers: list[str] = Field(default_factory=list)
    approval_via: str | None = None
    approval_timeout_seconds: float | None = Field(default=None, gt=0)
    tool_result_max_chars: int = Field(default=20_000, ge=500)
    web_fetch: Literal["on", "off"] = "on"

    # Live progress (bot/core/progress.py): answers streamed as written; 👀/✅ reactions
    streaming: Literal["on", "off"] = "on"
    ack_reactions: Literal["on", "off"] = "off"
    fetch_allow_hosts: list[str] = Field(default_factory=list)
    #: hosts (or globs) web_fetch may reach once untrusted content is in the conversation
    #: (agents/tools/egress.py); anything else then waits for a person's yes
    web_allow: list[str] = Field(default_factory=list)
    fetch_max_bytes: int = Field(default=2_000_000, ge=1_000)
    fetch_timeout_seconds: float = Field(default=20.0, gt=0)
    ssl_cert_file: Path | None = None  # web_fetch's CA bundle (a corporate CA), as OpenSSL

    # Scope (bot/inbox/scope.py; docs/security.md): targets always open, and what a crossing does
    targets: list[str] = Field(default_factory=list)
    cross_scope: Literal["approval", "deny"] = "approval"

    _csv = field_validator(
        "slack_allowed_users",
        "discord_allowed_users",
        "discord_allowed_channels",
        "email_allowed_senders",
        "approvers",
        "fetch_allow_hosts",
        "web_allow",
        "targets",
        "api_targets",
        mode="before",
    )(split_csv)
    _servers = field_validator("mcp_servers")(unique_servers)
    _hooks = field_validator("hooks")(unique_hooks)
    _hops = field_validator("email_authserv_hops", mode="before")(hops)
    _via = field_validator("approval_via")(lambda v: v if v is None else check_target(v))
    _targets = field_validator("targets")(lambda v: [check_target(t) for t in v])

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not is_postgres(value.get_secret_value()):
            raise ValueError("must be a PostgreSQL URL: postgresql://user:password@host/db")
        return value

    _durations = field_validator("remind_after", "stuck_after", mode="before")(
        lambda v: duration(v)
    )

    @field_validator("home")
    @classmethod
    def _home_is_target(cls, value: str | None) -> str | None:
        return value if value is None else check_target(value)

    _known_zone = field_validator("timezone")(check_zone)

    @field_validator("schedules")
    @classmethod
    def _unique_names(cls, value: list[ScheduleConfig]) -> list[ScheduleConfig]:
        names = [s.name for s in value]
        if len(names) != len(set(names)):
            raise ValueError("two [[schedules]] entries have the same name; names must differ")
        return value

    @field_validator("memory_distil_cron", "consolidate_cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        if len(value.split()) != 5 or not croniter.is_valid(value):
            raise ValueError("must be a 5-field cron expression, e.g. '0 3 * * *'")
        return value

    _people = field_validator("people")(check_people)

    @field_validator("email_tls_ca_file", "ssl_cert_file")
    @classmethod
    def _ca_file_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError("is not a readable file of CA certificates (PEM)")
        return value

    @model_validator(mode="after")
    def _people_in_allow_lists(self) -> Settings:
        for field, kind in (
            ("slack_allowed_users", "slack"),
            ("discord_allowed_users", "discord"),
            ("email_allowed_senders", "email"),
        ):
            try:
                setattr(self, field, expand_names(getattr(self, field), self.people, kind))
            except ValueError as exc:
                raise FieldProblem(field, str(exc)) from exc
        return self

    @model_validator(mode="after")
    def _complete(self) -> Settings:
        check_channels(self)
        settle(self)
        check_operator(self)
        return self

    # -- derived facts ---------------------------------------------------------------
    @property
    def slack_enabled(self) -> bool:
        return self.slack_bot_token is not None

    @property
    def discord_enabled(self) -> bool:
        return self.discord_bot_token is not None

    @property
    def email_enabled(self) -> bool:
        return self.email_address is not None

    @property
    def listen_port(self) -> int:
        """The HTTP port: SWITCHBOARD_HTTP_PORT, else PORT (Procfile hosts), else 3000."""
        return self.http_port or self.port or 3000

    @property
    def serves_http(self) -> bool:
        """`switchboard run` serves HTTP: a port is set, or Slack's HTTP Events or the API
        (SWITCHBOARD_API_TOKEN) need one."""
        slack_http = self.slack_signing_secret is not None and self.slack_app_token is None
        wanted = slack_http or self.api_token is not None or bool(self.hooks)
        return self.http_port is not None or self.port is not None or wanted

    @property
    def port_variable(self) -> str:
        """The variable the HTTP port came from, for messages about it."""
        return (
            "PORT" if self.http_port is None and self.port is not None else "SWITCHBOARD_HTTP_PORT"
        )

    def price(self, model: str) -> ModelPrice | None:
        """USD per million tokens for `model` (the config's table over the defaults)."""
        return price_of(model, {**DEFAULT_PRICES, **self.prices})

    @property
    def db_path(self) -> Path:
        return self.data_dir / "switchboard.db"

    @property
    def database(self) -> Database:
        """SWITCHBOARD_DATABASE_URL, else the SQLite file in the data dir."""
        return self.database_url.get_secret_value() if self.database_url else self.db_path

    @property
    def node(self) -> str:
        """This node's id: SWITCHBOARD_NODE_ID, else host name and pid."""
        return self.node_id or f"{socket.gethostname()}-{os.getpid()}"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


def load_settings(
    config_path: Path | None = None,
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Read the TOML file, overlay the environment and `overrides`, validate.

    Raises SettingsError with one line naming the variable at fault.
    """
    env = os.environ if environ is None else environ
    path = config_path if config_path is not None else default_config_path(env)
    values: dict[str, Any] = {}
    if path is not None:
        try:
            values.update(sources.read_file(path, Settings.model_fields))
        except sources.UnknownKey as exc:  # or no such file, or not TOML
            raise SettingsError(str(exc)) from exc
    try:
        values["mcp_servers"] = interpolate(values.get("mcp_servers", []), env)
        values["hooks"] = fill_secrets(values.get("hooks", []), env)
    except MissingVariable as exc:
        raise SettingsError(str(exc)) from exc
    values.update(from_environ(env, Settings.model_fields))
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return Settings(**values)
    except ValidationError as exc:
        raise SettingsError(one_line(exc, secret_fields())) from exc


def secret_fields() -> set[str]:
    """The settings whose values are secrets (`SecretStr`): never echoed in a message."""
    return {
        name
        for name, info in Settings.model_fields.items()
        if SecretStr in (info.annotation, *get_args(info.annotation))
    }


def require_llm(settings: Settings) -> None:
    """The LLM endpoints must be reachable in principle before anything starts."""
    problem = llm_problem(settings)
    if problem is not None:
        raise SettingsError(problem)
