"""No token, key, password or session id in the logs: a filter on the log handlers; and
`args_digest`, the audit log's digest of a call's arguments (nothing of them readable).

Every record is rendered once and scrubbed before any handler writes it: the
configured secrets (every `SecretStr` setting, and the values of MCP servers' `env`
and `headers`), credentials in URLs (`https://user:pass@host` keeps only the host),
bearer tokens, well-known token shapes (Slack `xox*-`/`xapp-`, Anthropic `sk-ant-`, JWTs,
Google's `ya29.`/`1//`, a SASL XOAUTH2/OAUTHBEARER response carrying an email token),
`token=`/`key=`/`password=`/`session=` parameters and session ids (`session ID: ...`,
`Mcp-Session-Id: ...`, as the MCP SDK logs them). An MCP server's URL may carry its key
in the path (`https://mcp.example.com/v1/<key>/mcp`, as hosted servers do): a path
segment of it that may be a key counts as a configured secret. The same goes for the
text of a logged exception.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import SecretStr

from config.callers import api_callers
from config.settings import Settings

MASK = "[redacted]"
MIN_SECRET = 6  # shorter configured values would mask ordinary words
_PATTERNS = (
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]*@"), r"\1" + MASK + "@"),
    (re.compile(r"(?i)\b(bearer|basic)\s+[\w.~+/=-]{8,}"), r"\1 " + MASK),
    (re.compile(r"\b(?:xox[abposr]|xapp)-[\w-]{6,}"), MASK),
    (re.compile(r"\bsk-ant-[\w-]{6,}"), MASK),
    # OAuth2 for email: a SASL initial response (base64 of the token), a JWT (Microsoft's
    # access tokens), Google's access and refresh tokens
    (re.compile(r"(?i)\b(XOAUTH2|OAUTHBEARER)\s+[A-Za-z0-9+/]{8,}={0,2}"), r"\1 " + MASK),
    (re.compile(r"\beyJ[\w-]{6,}\.[\w-]{6,}\.[\w-]*"), MASK),
    (re.compile(r"\bya29\.[\w.-]{8,}|\b1//[\w-]{16,}"), MASK),
    (
        re.compile(r"(?i)\b((?:[\w-]*[_-])?(?:token|key|secret|password|passwd|session"
                   r"|sessionid|sid|cookie)[\"']?\s*[=:]\s*[\"']?)[^\s&\"',;]+"),
        r"\1" + MASK,
    ),
    (re.compile(r"(?i)\b(session[\s_-]?id\b[\"']?\s*[=:]\s*[\"']?)[^\s&\"',;]+"), r"\1" + MASK),
)  # fmt: skip


class Redactor(logging.Filter):
    """A handler filter: the record's text (and its exception's) with secrets masked."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        for pattern, replacement in _PATTERNS:
            text = pattern.sub(replacement, text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = self.redact(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        return True


def configured_secrets(settings: Settings) -> list[str]:
    values = [
        value.get_secret_value()
        for name in type(settings).model_fields
        if isinstance(value := getattr(settings, name), SecretStr)
    ]
    if settings.api_token is not None:  # `ci:tok1,alerts:tok2`: each token alone too
        values += list(api_callers(settings.api_token.get_secret_value()))
    for server in settings.mcp_servers:
        values += [*server.env.values(), *server.headers.values()]
        values += [v.split(None, 1)[-1] for v in server.headers.values()]  # `Bearer <x>`
        values += url_path_parts(server.url)
    return values


def url_path_parts(url: str | None) -> list[str]:
    """The segments of an MCP server's URL path that may be a key (12 characters or more,
    or 6 or more with a digit), as written and decoded; `mcp`, `v1`, `search` stay."""
    if not url:
        return []
    parts = urlsplit(url).path.split("/")
    keys = [p for p in parts if len(p) >= 12 or (len(p) >= MIN_SECRET and _DIGIT.search(p))]
    return [*keys, *(unquote(p) for p in keys)]


_DIGIT = re.compile(r"[0-9]")


def install(settings: Settings, logger: logging.Logger | None = None) -> Redactor:
    """Put the filter on every handler of `logger` (the root logger by default)."""
    redactor = Redactor(configured_secrets(settings))
    for handler in (logger or logging.getLogger()).handlers:
        handler.addFilter(redactor)
    return redactor


DIGEST_CHARS = 16


def args_digest(args: Any) -> str:
    """A short sha256 of the arguments as canonical JSON (sorted keys, no spaces): the
    same call gives the same digest, and nothing of its content is readable."""
    canonical = json.dumps(
        args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]
