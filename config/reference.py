"""The settings reference, rendered from the settings model: docs/settings.md is what
`render()` returns (tests/setup/test_settings_doc.py holds them equal), so the page
cannot drift from the code. `python -m config.reference > docs/settings.md` writes it.

A field's meaning is its pydantic `description` when it has one, else the line below.
Imports nothing of the project but config.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from config.settings import Settings
from config.sources import FILE_ONLY, env_name

#: the page's sections, in order: (title, fields); a field in none goes to "Other"
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Model",
        (
            "anthropic_api_key",
            "anthropic_base_url",
            "model",
            "model_workers",
            "model_background",
            "model_fallback",
            "openai_api_key",
            "openai_base_url",
            "aws_region",
            "anthropic_bedrock_base_url",
            "cloud_ml_region",
            "anthropic_vertex_project_id",
            "anthropic_vertex_base_url",
            "max_tokens",
            "effort",
            "effort_workers",
            "effort_background",
            "max_llm_calls",
            "llm_retry_base_seconds",
            "llm_retry_max_seconds",
            "daily_budget_usd",
            "budget_warn_at",
            "prices",
        ),
    ),
    (
        "Core",
        (
            "data_dir",
            "home",
            "timezone",
            "max_workers",
            "max_turns",
            "outbox_retry_base_seconds",
            "streaming",
            "ack_reactions",
            "remind_after",
            "stuck_after",
            "file_max_bytes",
        ),
    ),
    (
        "HTTP: health, metrics, dashboard, API",
        (
            "http_port",
            "port",
            "http_host",
            "dashboard_token",
            "cookie_secure",
            "metrics_public",
            "api_token",
            "api_targets",
        ),
    ),
    ("Several nodes", ("database_url", "leader_ttl_seconds", "node_id")),
    (
        "Slack",
        (
            "slack_bot_token",
            "slack_app_token",
            "slack_signing_secret",
            "slack_api_url",
            "slack_allowed_users",
            "slack_pace_seconds",
        ),
    ),
    (
        "Discord",
        (
            "discord_bot_token",
            "discord_api_url",
            "discord_gateway_url",
            "discord_allowed_users",
            "discord_allowed_channels",
        ),
    ),
    (
        "Email",
        (
            "email_address",
            "email_allowed_senders",
            "email_authserv_id",
            "email_authserv_hops",
            "email_unverified",
            "email_auth",
            "email_oauth_provider",
            "email_oauth_client_id",
            "email_oauth_client_secret",
            "email_oauth_tenant",
            "email_oauth_cert_file",
            "email_oauth_authority",
            "email_oauth_refresh_token",
            "email_oauth_service_account_file",
            "email_oauth_token_url",
            "email_oauth_scope",
            "email_oauth_client_auth",
            "imap_host",
            "imap_port",
            "imap_user",
            "imap_password",
            "imap_tls",
            "imap_mailbox",
            "imap_idle_seconds",
            "imap_poll_seconds",
            "smtp_host",
            "smtp_port",
            "smtp_user",
            "smtp_password",
            "smtp_tls",
            "email_tls_ca_file",
            "email_max_chars",
            "email_max_bytes",
            "email_max_per_sender_per_hour",
        ),
    ),
    (
        "Memory and people",
        (
            "compact_at_tokens",
            "compact_keep_tokens",
            "memory_prompt_tokens",
            "memory_file_max_bytes",
            "memory_inline_bytes",
            "memory_rescan_seconds",
            "memory_search",
            "memory_distil",
            "memory_distil_cron",
            "consolidate",
            "consolidate_cron",
            "people",
        ),
    ),
    ("Triggers", ("schedules", "heartbeat", "trigger_min_interval_seconds")),
    ("Alerts and webhooks", ("hooks",)),
    (
        "Running for months",
        (
            "retention",
            "audit_retention",
            "prune_cron",
            "events_max_bytes",
            "events_keep",
        ),
    ),
    (
        "Tools, approvals and scope",
        (
            "mcp_servers",
            "approvers",
            "approval_via",
            "approval_timeout_seconds",
            "tool_result_max_chars",
            "targets",
            "cross_scope",
            "web_fetch",
            "web_allow",
            "fetch_allow_hosts",
            "fetch_max_bytes",
            "fetch_timeout_seconds",
            "ssl_cert_file",
        ),
    ),
)

MEANING: dict[str, str] = {
    "anthropic_api_key": "the Anthropic API key (read by the anthropic SDK)",
    "anthropic_base_url": "an Anthropic-compatible server instead of Anthropic's API",
    "model": "the coordinator's model, and every role's unless set "
    "(`anthropic:<model>` or a bare name); see [models](models.md)",
    "model_workers": "the workers' model",
    "model_background": "the model of background calls (summaries, memory upkeep)",
    "model_fallback": "models a turn goes on with when its model stays unavailable "
    "(comma list; [models](models.md#failover))",
    "openai_api_key": "the key for `openai:` models (`switchboard[openai]`)",
    "openai_base_url": "an OpenAI-compatible server for `openai:` models",
    "aws_region": "the AWS region of `bedrock:` models (`switchboard[bedrock]`)",
    "anthropic_bedrock_base_url": "another Bedrock endpoint (tests, a proxy)",
    "cloud_ml_region": "the Google Cloud region of `vertex:` models (`switchboard[vertex]`)",
    "anthropic_vertex_project_id": "the Google Cloud project of `vertex:` models",
    "anthropic_vertex_base_url": "another Vertex AI endpoint (tests, a proxy)",
    "max_tokens": "output limit per response, thinking included (cut to the model's own)",
    "effort": "how much the coordinator thinks: off, low, medium, high, xhigh, max (default low)",
    "effort_workers": "the workers' effort (default medium)",
    "effort_background": "background calls' effort (default low)",
    "max_llm_calls": "model calls in flight at once",
    "llm_retry_base_seconds": "first wait before a failed model call is retried",
    "llm_retry_max_seconds": "longest wait between retries of a model call",
    "daily_budget_usd": "new model calls wait once today's cost reaches this (unset: no cap)",
    "budget_warn_at": "the share of the daily budget at which the home target is told, once a "
    "day, what will wait once it is reached",
    "hooks": "`[[hooks]]`: signed inbound hooks (docs/hooks.md)",
    "retention": "handled journal rows, sent outbox rows, attempts, events, usage detail and "
    "archived transcripts older than this are pruned (`90d`, `12h`, plain days)",
    "audit_retention": "audit lines older than this are pruned, by age only",
    "prune_cron": "when the leader prunes (cron, in `timezone`)",
    "events_max_bytes": "events.jsonl is rotated at this size",
    "events_keep": "how many rotated events files are kept",
    "prices": '`[prices."<model>"]` USD per million tokens: input, output, cache_read, cache_write',
    "data_dir": "where all state lives",
    "home": "delivery target for messages that belong to no conversation "
    "(`slack:<channel>`, `discord:<channel>`, `email:<address>`, `terminal`)",
    "timezone": "default time zone of triggers, daily logs and people (IANA name)",
    "max_workers": "workers running at once",
    "max_turns": "model calls per coordinator turn and per worker task",
    "outbox_retry_base_seconds": "first wait before a failed delivery is retried",
    "streaming": "answers written as they come (`on`/`off`)",
    "ack_reactions": "👀 when an agent takes a message, ✅ when done (`on`/`off`)",
    "remind_after": "an open question or approval is reminded after this, then daily "
    "(`30m`, `4h`, `1d` or seconds)",
    "stuck_after": "a worker silent this long is reported once",
    "file_max_bytes": "largest file saved from a message",
    "http_port": "port of `/healthz`, `/metrics`, the dashboard, the API and Slack HTTP Events",
    "port": "the port a Procfile host gives (used when SWITCHBOARD_HTTP_PORT is unset)",
    "http_host": "address the HTTP server binds (not loopback: a dashboard token is required)",
    "dashboard_token": "the dashboard's sign-in token (8+ characters; `openssl rand -hex 24`)",
    "cookie_secure": "the dashboard cookie is `Secure`: set `true` behind HTTPS",
    "metrics_public": "`/healthz` and `/metrics` answer without the token "
    "(no error texts, no spend)",
    "api_token": "turns the HTTP API on: `name:token` pairs, comma-separated",
    "api_targets": "places an API caller may post into besides its own conversations "
    "(`name:target` pairs)",
    "database_url": "`postgresql://user:password@host/db`: state in PostgreSQL, several "
    "nodes as one bot (needs `switchboard[postgres]`; unset: SQLite in the data dir)",
    "leader_ttl_seconds": "a leader silent this long loses the lead",
    "node_id": "this node's name (default host name and pid)",
    "slack_bot_token": "the bot token (`xoxb-…`); turns Slack on",
    "slack_app_token": "the app-level token (`xapp-…`, `connections:write`): Socket Mode",
    "slack_signing_secret": "HTTP Events mode instead of Socket Mode",
    "slack_api_url": "Slack's Web API (a local fake in tests)",
    "slack_allowed_users": "who may talk to the bot (ids or `[[people]]` names; empty: everyone)",
    "slack_pace_seconds": "at most one post per Slack channel this often",
    "discord_bot_token": "the bot token; turns Discord on",
    "discord_api_url": "Discord's REST API (a local fake in tests)",
    "discord_gateway_url": "the gateway's address (default: the one Discord names)",
    "discord_allowed_users": "who may talk to the bot (empty: everyone)",
    "discord_allowed_channels": "channels the bot reads (`dm` for direct messages; empty: all)",
    "email_address": "the bot's address; turns email on",
    "email_allowed_senders": "who may write: addresses or `@domain` (empty: nobody)",
    "email_authserv_id": "the authserv-id of your receiving server's Authentication-Results "
    "(filled in for Gmail and Microsoft 365); see [email](email.md)",
    "email_authserv_hops": "`Received` headers your servers add above it (`any` for "
    "Gmail/Microsoft 365)",
    "email_unverified": "`refuse` mail the server did not verify, or `accept` it as from "
    "an unlisted sender",
    "email_auth": "`password` or `oauth2` (sign in with tokens; [email](email.md))",
    "email_oauth_provider": "`microsoft`, `google` or `generic`",
    "email_oauth_client_id": "the OAuth app's (client's) id",
    "email_oauth_client_secret": "its secret (Microsoft app-only, Google with a refresh token, "
    "generic)",
    "email_oauth_tenant": "Microsoft: the directory (tenant) id or its domain",
    "email_oauth_cert_file": "Microsoft app-only: a certificate instead of a secret",
    "email_oauth_authority": "Microsoft: the login host (another cloud)",
    "email_oauth_refresh_token": "a person's refresh token (Google; Microsoft delegated)",
    "email_oauth_service_account_file": "Google: a service account's key file (JSON)",
    "email_oauth_token_url": "generic: the token endpoint; Google: instead of its own",
    "email_oauth_scope": "the scope asked for (Microsoft's and Google's are the default)",
    "email_oauth_client_auth": "generic: the secret in the form `body` or as HTTP `basic`",
    "imap_host": "IMAP server",
    "imap_port": "IMAP port (default 993 with ssl, else 143)",
    "imap_user": "IMAP login (default EMAIL_ADDRESS)",
    "imap_password": "IMAP password",
    "imap_tls": "`ssl`, `starttls` or `none`",
    "imap_mailbox": "the folder read",
    "imap_idle_seconds": "a full sync at the latest this often",
    "imap_poll_seconds": "how often a server without IDLE is polled",
    "smtp_host": "SMTP submission server",
    "smtp_port": "SMTP port (default 465 with ssl, else 587)",
    "smtp_user": "SMTP login (default EMAIL_ADDRESS)",
    "smtp_password": "SMTP password",
    "smtp_tls": "`ssl`, `starttls` or `none`",
    "email_tls_ca_file": "a private CA for IMAP and SMTP (PEM)",
    "email_max_chars": "characters of a mail's text the agent reads",
    "email_max_bytes": "largest mail fetched",
    "email_max_per_sender_per_hour": "mails accepted per sender per hour",
    "compact_at_tokens": "a transcript this long is summarised",
    "compact_keep_tokens": "recent turns kept verbatim when summarising",
    "memory_prompt_tokens": "memory put in every prompt",
    "memory_file_max_bytes": "largest memory file",
    "memory_inline_bytes": "below this the whole memory is a search's answer",
    "memory_rescan_seconds": "how often memory files are re-read for search",
    "memory_search": "`hybrid`: memory_search ranks by keywords and meaning (a bundled "
    "model, no network); `keywords`: by keywords only",
    "memory_distil": "distil daily logs into MEMORY.md nightly",
    "memory_distil_cron": "when (cron, in SWITCHBOARD_TIMEZONE)",
    "consolidate": "consolidate conversations into team knowledge nightly",
    "consolidate_cron": "when (cron, in SWITCHBOARD_TIMEZONE)",
    "people": "`[[people]]`: one person across channels (name, ids, time zone)",
    "schedules": "`[[schedules]]`: triggers from the config file",
    "heartbeat": "`[heartbeat]`: a periodic look at what needs doing",
    "trigger_min_interval_seconds": "shortest interval between a trigger's runs",
    "mcp_servers": "`[[mcp_servers]]`: MCP servers and which of their tools need approval",
    "approvers": "who may approve a gated call: ids, addresses, `[[people]]` names "
    "(empty: anyone but the asker)",
    "approval_via": "where approvals of trigger-started work are asked",
    "approval_timeout_seconds": "an approval not given in this long is denied (unset: wait)",
    "tool_result_max_chars": "a longer tool result is cut",
    "targets": "delivery targets open to every agent without approval",
    "cross_scope": "a call outside its conversation: `approval` or `deny`",
    "web_fetch": "agents may read web pages (`on`/`off`)",
    "web_allow": "hosts web_fetch reaches without approval once untrusted text is read",
    "fetch_allow_hosts": "private hosts web_fetch may reach",
    "fetch_max_bytes": "largest page read",
    "fetch_timeout_seconds": "a page not read in this long fails",
    "ssl_cert_file": "CA bundle for web_fetch (a corporate CA)",
}

INTRO = """\
# Settings

<!-- Generated by `python -m config.reference > docs/settings.md`: do not edit by hand. -->

Settings come from a TOML file (`--config`, else `$SWITCHBOARD_CONFIG`, else
`config/switchboard.toml` when present), then the environment, which wins. In the file a
setting is written flat (`max_workers = 4`, under `[switchboard]`) or in its platform's
section (`[slack]` `bot_token = ...`). A missing or malformed value, or a key the file
does not know, stops the start with one line naming it. `switchboard init` writes a
commented file and a `.env`; `switchboard doctor` checks them.
"""


def _default(name: str) -> str:
    info = Settings.model_fields[name]
    if info.is_required():
        return "required"
    value: Any = info.get_default(call_default_factory=True)
    if value is None or value == [] or value == {}:
        return ""
    if isinstance(value, SecretStr):
        return "(secret)"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str | int | float | Path):
        return f"`{value}`"
    return f"`{json.dumps(value, default=str)}`"


def _name(field: str) -> str:
    if field in FILE_ONLY:
        return f"file: `{field}`"
    return f"`{env_name(field)}`"


def _meaning(field: str) -> str:
    return Settings.model_fields[field].description or MEANING.get(field, "")


def render() -> str:
    """docs/settings.md, from the settings model."""
    listed = [f for _, fields in SECTIONS for f in fields]
    rest = tuple(f for f in Settings.model_fields if f not in listed)
    out = [INTRO]
    for title, fields in (*SECTIONS, ("Other", rest)):
        present = [f for f in fields if f in Settings.model_fields]
        if not present:
            continue
        out.append(f"\n## {title}\n\n| setting | default | meaning |\n|---|---|---|\n")
        out.extend(f"| {_name(f)} | {_default(f)} | {_meaning(f)} |\n" for f in present)
    return "".join(out)


if __name__ == "__main__":
    print(render(), end="")
