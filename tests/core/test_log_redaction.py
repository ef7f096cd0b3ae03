"""No token, key, password or session id reaches a log line: the handler filter masks
the configured secrets, URL credentials, bearer tokens and token parameters, in the
message and in a logged exception's text."""

from __future__ import annotations

import io
import logging
from pathlib import Path

from bot.core import redact
from config.settings import load_settings
from tests.kits.tools_kit import write_config

SLACK = "xoxb-1111-2222-abcdefABCDEF"
DASHBOARD = "dash-token-0123456789"
MCP_KEY = "mcp-header-secret-42"
IMAP = "imap-pa55word"
API_CI, API_ALERTS = "ci-token-0123456789", "alerts-token-98765"


def _logger(tmp_path: Path) -> tuple[logging.Logger, io.StringIO]:
    config = write_config(
        tmp_path / "s.toml",
        [{"name": "ops", "url": "http://127.0.0.1:1/mcp",
          "headers": {"Authorization": f"Bearer {MCP_KEY}"}}],
    )  # fmt: skip
    env = {
        "ANTHROPIC_API_KEY": "sk-ant-api03-secretsecret",
        "SLACK_BOT_TOKEN": SLACK,
        "SLACK_APP_TOKEN": "xapp-1-A0-secretsecret",
        "SWITCHBOARD_DASHBOARD_TOKEN": DASHBOARD,
        "IMAP_PASSWORD": IMAP,
        "SWITCHBOARD_API_TOKEN": f"ci:{API_CI},alerts:{API_ALERTS}",
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
    }
    settings = load_settings(config, env)
    out = io.StringIO()
    logger = logging.getLogger(f"redaction-test-{tmp_path.name}")
    logger.propagate = False
    logger.addHandler(logging.StreamHandler(out))
    redact.install(settings, logger)
    return logger, out


def test_configured_secrets_and_credentials_never_reach_the_log(tmp_path: Path) -> None:
    logger, out = _logger(tmp_path)
    logger.warning("slack said invalid_auth for %s", SLACK)
    logger.warning("login to imap with %r failed", IMAP)
    logger.warning("GET https://ann:hunter22@intranet.example.com/report?token=abc123&x=1")
    logger.warning(
        "dashboard hit with Authorization: Bearer %s, cookie sb_session=s3ss10nid", DASHBOARD
    )
    logger.warning("mcp headers %s", {"Authorization": f"Bearer {MCP_KEY}"})
    logger.warning("api callers %s and %s", API_CI, API_ALERTS)  # each token of the list
    logger.warning("an unconfigured slack token xoxp-999-888-zzzz leaked, and sk-ant-xyz123456")
    try:
        raise RuntimeError(f"connect failed: password={IMAP} at imap://bot:{IMAP}@mail")
    except RuntimeError:
        logger.exception("imap down")
    text = out.getvalue()
    for secret in (SLACK, IMAP, "hunter22", "abc123", DASHBOARD, "s3ss10nid", MCP_KEY,
                   "xoxp-999", "sk-ant-xyz", API_CI, API_ALERTS):  # fmt: skip
        assert secret not in text, secret
    assert "https://[redacted]@intranet.example.com/report?token=[redacted]&x=1" in text
    assert "slack said invalid_auth for [redacted]" in text
    assert "RuntimeError: connect failed" in text and "imap down" in text  # still useful


def test_ordinary_lines_are_left_alone(tmp_path: Path) -> None:
    logger, out = _logger(tmp_path)
    logger.warning("outbox row %d delivered to slack:C1/1700.1 in %.1f ms", 7, 2.5)
    assert out.getvalue() == "outbox row 7 delivered to slack:C1/1700.1 in 2.5 ms\n"
