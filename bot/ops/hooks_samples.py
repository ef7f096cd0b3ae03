"""Sample payloads, one per hook kind, as each provider sends them today
(`switchboard hooks test <name>`, and the tests): Alertmanager's webhook (version 4),
a GitHub `workflow_run` that failed, a PagerDuty v3 `incident.triggered`, and a
generic event. Plus how each kind's request is signed. Imports nothing of the project
but the signing of bot/ops/hooks_verify.py.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from bot.ops.hooks_verify import sign


def alertmanager(
    status: str = "firing", alerts: int = 1, group: str = "HighLatency"
) -> dict[str, Any]:
    labels = {"alertname": group, "severity": "critical", "service": "api"}
    return {
        "version": "4",
        "groupKey": f'{{}}:{{alertname="{group}"}}',
        "truncatedAlerts": 0,
        "status": status,
        "receiver": "switchboard",
        "groupLabels": {"alertname": group},
        "commonLabels": labels,
        "commonAnnotations": {
            "summary": f"{group} on api",
            "runbook_url": "https://runbooks.example/latency",
        },
        "externalURL": "http://alertmanager.example:9093",
        "alerts": [
            {
                "status": status,
                "labels": {**labels, "instance": f"api-{i}:9100"},
                "annotations": {"description": f"p99 latency above 2s on api-{i}"},
                "startsAt": "2026-11-28T09:00:00Z",
                "endsAt": "2026-11-28T09:30:00Z"
                if status == "resolved"
                else "0001-01-01T00:00:00Z",
                "generatorURL": f"http://prometheus.example:9090/graph?g0.expr=latency{i}",
                "fingerprint": f"{i:016x}",
            }
            for i in range(alerts)
        ],
    }


def workflow_run(conclusion: str = "failure") -> dict[str, Any]:
    return {
        "action": "completed",
        "workflow_run": {
            "id": 30433642, "name": "CI", "display_title": "Fix the cache", "head_branch": "main",
            "head_sha": "acb5820ced9479c074f688cc328bf03f341a511d", "event": "push",
            "status": "completed", "conclusion": conclusion, "run_number": 562, "run_attempt": 1,
            "html_url": "https://github.com/octo-org/octo-repo/actions/runs/30433642",
            "actor": {"login": "octocat"}, "created_at": "2026-11-28T09:00:00Z",
            "updated_at": "2026-11-28T09:05:00Z",
        },
        "workflow": {"id": 159038, "name": "CI", "path": ".github/workflows/ci.yml"},
        "repository": {"id": 1296269, "full_name": "octo-org/octo-repo"},
        "sender": {"login": "octocat"},
    }  # fmt: skip


def pagerduty(event_type: str = "incident.triggered", status: str = "triggered") -> dict[str, Any]:
    return {
        "event": {
            "id": "01DEN" + uuid.uuid4().hex[:20].upper(), "event_type": event_type,
            "resource_type": "incident", "occurred_at": "2026-11-28T09:00:00.000Z",
            "agent": {"type": "user_reference", "summary": "Tenex Engineer"},
            "client": None,
            "data": {
                "id": "PGR0VU2", "type": "incident", "number": 2,
                "html_url": "https://acme.pagerduty.com/incidents/PGR0VU2",
                "status": status, "incident_key": "d3640fbd41094207a1c11e58e46b1662",
                "title": "A little bump in the road", "urgency": "high",
                "service": {"id": "PF9KMXH", "summary": "API Service", "type": "service_reference"},
                "assignees": [{"id": "PTUXL6G", "summary": "User 123", "type": "user_reference"}],
                "escalation_policy": {"id": "PUS0KTE", "summary": "Default"},
                "priority": {"id": "PSO75BM", "summary": "P1"},
            },
        }
    }  # fmt: skip


def generic() -> dict[str, Any]:
    return {"event": "deploy.finished", "service": "api", "version": "41", "status": "ok"}


def sample(kind: str) -> dict[str, Any]:
    if kind == "alertmanager":
        return alertmanager()
    if kind == "github":
        return workflow_run()
    return pagerduty() if kind == "pagerduty" else generic()


def signed(kind: str, secret: str, body: bytes, delivery: str | None = None) -> dict[str, str]:
    """The headers a `kind` sender puts on `body`."""
    headers = {"Content-Type": "application/json"}
    if kind == "github":
        headers.update({
            "X-Hub-Signature-256": "sha256=" + sign(secret, body),
            "X-GitHub-Event": "workflow_run",
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        })  # fmt: skip
    elif kind == "pagerduty":
        headers["X-PagerDuty-Signature"] = "v1=" + sign(secret, body)
    elif kind == "alertmanager":
        headers["Authorization"] = f"Bearer {secret}"
    else:
        stamp = str(int(time.time()))
        headers["X-Timestamp"] = stamp
        headers["X-Signature-256"] = "sha256=" + sign(secret, stamp.encode() + b"." + body)
        headers["Idempotency-Key"] = delivery or uuid.uuid4().hex
    return headers


def encoded(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()
