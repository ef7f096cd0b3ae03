"""How each kind of hook signs its requests, and what makes a delivery the same one.

- `github`: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`; the delivery
  is `X-GitHub-Delivery` (GitHub redelivers under the same id: that is the replay guard).
- `pagerduty` (v3 webhooks): `X-PagerDuty-Signature: v1=<hex>[,v1=<hex>...]` (several
  while a secret is rotated: any one matching passes); the delivery is the event's id.
- `alertmanager`: `Authorization: Bearer <secret>` (its `http_config.authorization`);
  the delivery is the group key with the status and every alert's fingerprint and start.
- `generic`: `Authorization: Bearer <secret>`, or `X-Signature-256: sha256=<hex>`: the
  HMAC of the body, or of `<X-Timestamp>.<body>` when an `X-Timestamp` (Unix seconds)
  is sent, which must then be within `MAX_SKEW_SECONDS` of now. The delivery is the
  `Idempotency-Key` header (none: every request is new).

Every comparison is constant-time. Imports nothing of the project.
"""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from collections.abc import Mapping
from typing import Any

#: how far an `X-Timestamp` may be from now (Slack and Stripe use five minutes)
MAX_SKEW_SECONDS = 300.0


class Refused(Exception):
    """A request the hook refuses: its HTTP status and the reason (never a secret)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def sign(secret: str, body: bytes) -> str:
    """The hex HMAC-SHA256 of `body` under `secret`."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(kind: str, secret: str, headers: Mapping[str, str], body: bytes) -> None:
    """Raise `Refused(401)` unless the request is signed as its kind signs."""
    if kind == "github":
        _hmac_header(headers.get("X-Hub-Signature-256", ""), "sha256=", secret, body)
    elif kind == "pagerduty":
        _pagerduty(headers.get("X-PagerDuty-Signature", ""), secret, body)
    elif kind == "alertmanager":
        _bearer(headers.get("Authorization", ""), secret)
    else:
        _generic(headers, secret, body)


def _equal(given: str, wanted: str) -> bool:
    return hmac.compare_digest(given.encode(), wanted.encode())


def _bearer(header: str, secret: str) -> None:
    given = header[7:].strip() if header[:7].lower() == "bearer " else ""
    if not _equal(given, secret):
        raise Refused(401, "Authorization: Bearer <secret> does not match")


def _hmac_header(header: str, prefix: str, secret: str, body: bytes) -> None:
    given = header.strip()[len(prefix) :] if header.strip().startswith(prefix) else ""
    if not _equal(given.lower(), sign(secret, body)):
        raise Refused(401, "the signature does not match the body")


def _pagerduty(header: str, secret: str, body: bytes) -> None:
    wanted = sign(secret, body)
    matched = False
    for part in header.split(","):  # every one compared: no early exit
        part = part.strip()
        if part.startswith("v1=") and _equal(part[3:].lower(), wanted):
            matched = True
    if not matched:
        raise Refused(401, "no v1 signature matches the body")


def _generic(headers: Mapping[str, str], secret: str, body: bytes) -> None:
    stamp = headers.get("X-Timestamp")
    signature = headers.get("X-Signature-256")
    if signature is None:
        if stamp is not None:
            raise Refused(401, "X-Timestamp needs X-Signature-256 over it and the body")
        _bearer(headers.get("Authorization", ""), secret)
        return
    if stamp is not None:
        fresh(stamp)
        body = stamp.strip().encode() + b"." + body
    _hmac_header(signature, "sha256=", secret, body)


def fresh(stamp: str, now: float | None = None) -> None:
    """A signed timestamp within the window, else `Refused(401)`."""
    try:
        at = float(stamp.strip())
    except ValueError as exc:
        raise Refused(401, "X-Timestamp must be Unix seconds") from exc
    if abs((time.time() if now is None else now) - at) > MAX_SKEW_SECONDS:
        raise Refused(401, f"X-Timestamp is more than {MAX_SKEW_SECONDS:.0f} s from now")


def delivery_id(kind: str, headers: Mapping[str, str], body: dict[str, Any]) -> str:
    """What makes a delivery the same one when it comes again."""
    if kind == "github":
        return _required(headers.get("X-GitHub-Delivery"), "X-GitHub-Delivery header")
    if kind == "pagerduty":
        event = body.get("event")
        found = event.get("id") if isinstance(event, dict) else None
        return _required(found, '"event.id"')
    if kind == "alertmanager":
        return alert_key(body)
    key = headers.get("Idempotency-Key")
    return _required(key, "Idempotency-Key") if key is not None else uuid.uuid4().hex


def _required(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise Refused(400, f"{what} is missing or not a short string")
    return value.strip()


def alert_key(body: dict[str, Any]) -> str:
    """An Alertmanager notification: its group, status, and each alert (fingerprint and
    start, so an alert that fires again after resolving is news)."""
    alerts = body.get("alerts")
    if not isinstance(body.get("groupKey"), str) or not isinstance(alerts, list):
        raise Refused(400, 'an Alertmanager payload has "groupKey" and "alerts"')
    parts = sorted(
        f"{a.get('fingerprint', '')}@{a.get('startsAt', '')}:{a.get('status', '')}"
        for a in alerts
        if isinstance(a, dict)
    )
    text = "\n".join([body["groupKey"], str(body.get("status")), *parts])
    return hashlib.sha256(text.encode()).hexdigest()[:40]
