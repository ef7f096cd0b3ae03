"""What of a hook's payload reaches the agent: trimmed to what matters, per kind.

Alertmanager: the status, group and common labels and annotations, links, and the
first `max_alerts` alerts (their own labels, annotations, times, link) with a count of
the rest. GitHub: the event, action, repository, who, and the fields of the event's
object that say what happened (a `workflow_run`'s name, branch, conclusion, link...).
PagerDuty v3: the event type and the incident's title, status, urgency, service,
links. Generic: the JSON itself, bounded in depth, keys and length. Every string is cut
to `MAX_STRING` characters, so no megabyte of JSON reaches a model.

`fields` are the flat facts a `filter` (the hook's, or an `on_event` trigger's) is
matched on; `group` is what ties later notifications to the thread of the first (an
alert group's key, a PagerDuty incident's id). Imports nothing of the project.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

MAX_STRING = 500
MAX_KEYS = 40
MAX_DEPTH = 4
MAX_LIST = 20
MAX_FIELDS = 24
_ALERT_KEYS = ("status", "startsAt", "endsAt", "generatorURL", "fingerprint")


@dataclass(slots=True)
class View:
    """A delivery as the agent and the filters see it."""

    data: dict[str, Any]
    fields: dict[str, str] = field(default_factory=dict)
    group: str | None = None

    def text(self) -> str:
        return rendered(self.data)


def rendered(data: Any) -> str:
    """The view as the model reads it: indented JSON."""
    return json.dumps(data, indent=1, ensure_ascii=False)


def view(kind: str, event: str, body: dict[str, Any], max_alerts: int = 20) -> View:
    """`event` is GitHub's `X-GitHub-Event` (else "")."""
    if kind == "alertmanager":
        return _alertmanager(body, max_alerts)
    if kind == "github":
        return _github(event, body)
    if kind == "pagerduty":
        return _pagerduty(body)
    data = bounded(body)
    return View(data, _flat(body))


def bounded(value: Any, depth: int = 0) -> Any:
    """`value` with every string, list, mapping and depth cut to the limits."""
    if isinstance(value, str):
        return value if len(value) <= MAX_STRING else value[:MAX_STRING] + "…"
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            return f"({len(value)} keys)"
        items = list(value.items())
        out = {str(k)[:80]: bounded(v, depth + 1) for k, v in items[:MAX_KEYS]}
        if len(items) > MAX_KEYS:
            out["…"] = f"{len(items) - MAX_KEYS} more keys"
        return out
    if isinstance(value, list):
        if depth >= MAX_DEPTH:
            return f"({len(value)} items)"
        shown = [bounded(v, depth + 1) for v in value[:MAX_LIST]]
        return shown + ([f"… {len(value) - MAX_LIST} more"] if len(value) > MAX_LIST else [])
    return value if value is None or isinstance(value, bool | int | float) else str(value)


def _flat(body: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """The scalar fields of a mapping (one level of nesting as `a.b`), cut short."""
    out: dict[str, str] = {}
    for key, value in list(body.items())[:MAX_KEYS]:
        name = f"{prefix}{key}"
        if isinstance(value, dict) and not prefix:
            out.update(_flat(value, f"{name}."))
        elif isinstance(value, str | int | float | bool) and len(out) < MAX_FIELDS:
            out[name[:60]] = str(value)[:80]
    return out


def _labels(value: Any) -> dict[str, Any]:
    return bounded(value) if isinstance(value, dict) else {}


def _alertmanager(body: dict[str, Any], max_alerts: int) -> View:
    alerts = [a for a in body.get("alerts") or [] if isinstance(a, dict)]
    common = _labels(body.get("commonLabels"))
    firing = sum(1 for a in alerts if a.get("status") == "firing")
    data = {
        "status": body.get("status"),
        "receiver": body.get("receiver"),
        "groupLabels": _labels(body.get("groupLabels")),
        "commonLabels": common,
        "commonAnnotations": _labels(body.get("commonAnnotations")),
        "externalURL": bounded(body.get("externalURL")),
        "alerts_firing": firing,
        "alerts_resolved": len(alerts) - firing,
        "alerts_truncated_by_alertmanager": body.get("truncatedAlerts", 0),
        "alerts": [_alert(a, common) for a in alerts[:max_alerts]],
    }
    if len(alerts) > max_alerts:
        data["alerts_not_shown"] = len(alerts) - max_alerts
    fields = {k: str(v)[:80] for k, v in list(common.items())[:MAX_FIELDS]}
    fields.update(status=str(body.get("status")), receiver=str(body.get("receiver"))[:80])
    return View(data, fields, "am:" + str(body.get("groupKey")))


def _alert(alert: dict[str, Any], common: dict[str, Any]) -> dict[str, Any]:
    labels = {k: v for k, v in _labels(alert.get("labels")).items() if common.get(k) != v}
    shown = {k: bounded(alert.get(k)) for k in _ALERT_KEYS if alert.get(k)}
    return {**shown, "labels": labels, "annotations": _labels(alert.get("annotations"))}


def _pick(obj: Any, *paths: str) -> dict[str, Any]:
    """The values at dotted `paths` of `obj` that are there, bounded."""
    out: dict[str, Any] = {}
    for path in paths:
        value = obj
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value not in (None, "", [], {}):
            out[path] = bounded(value)
    return out


_GITHUB = {
    "workflow_run": (
        "name", "display_title", "head_branch", "head_sha", "event", "status", "conclusion",
        "run_number", "run_attempt", "html_url", "actor.login", "created_at", "updated_at",
    ),
    "workflow_job": ("name", "workflow_name", "head_branch", "status", "conclusion", "html_url"),
    "check_run": ("name", "status", "conclusion", "html_url", "output.title", "output.summary"),
    "check_suite": ("head_branch", "status", "conclusion", "app.name"),
    "pull_request": ("number", "title", "state", "merged", "html_url", "user.login", "base.ref"),
    "issues": ("number", "title", "state", "html_url", "user.login"),
    "deployment_status": ("state", "environment", "description", "target_url"),
    "release": ("tag_name", "name", "html_url", "prerelease"),
    "push": (),
}  # fmt: skip
_OBJECT = {"issues": "issue", "deployment_status": "deployment_status"}


def _github(event: str, body: dict[str, Any]) -> View:
    data: dict[str, Any] = {"event": event, **_pick(body, "action", "repository.full_name",
                                                    "sender.login")}  # fmt: skip
    if event == "push":
        data.update(_pick(body, "ref", "compare", "head_commit.message", "pusher.name"))
        data["commits"] = len(body.get("commits") or [])
    elif event in _GITHUB:
        obj = body.get(_OBJECT.get(event, event))
        data[event] = _pick(obj, *_GITHUB[event])
    else:
        data["payload"] = bounded({k: v for k, v in body.items() if not isinstance(v, dict)})
    thing = data.get(event) if isinstance(data.get(event), dict) else {}
    fields = {k: str(v)[:80] for k, v in data.items() if _scalar(v)}
    fields.update({k: str(v)[:80] for k, v in (thing or {}).items() if _scalar(v)})
    fields["event"] = event  # GitHub's event name, not the run's trigger
    return View(data, fields)


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


_PD_FIELDS = (
    "id", "number", "title", "status", "urgency", "html_url", "service.summary",
    "priority.summary", "escalation_policy.summary", "resolve_reason", "incident.summary",
)  # fmt: skip


def _pagerduty(body: dict[str, Any]) -> View:
    event = body.get("event")
    event = event if isinstance(event, dict) else {}
    inner = event.get("data")
    inner = inner if isinstance(inner, dict) else {}
    data = {
        **_pick(event, "event_type", "resource_type", "occurred_at", "agent.summary"),
        **_pick(inner, *_PD_FIELDS),
    }
    assignees = inner.get("assignees")
    if isinstance(assignees, list):
        data["assignees"] = [bounded(a.get("summary")) for a in assignees[:MAX_LIST]
                             if isinstance(a, dict)]  # fmt: skip
    fields = {k.replace(".summary", ""): str(v)[:80] for k, v in data.items() if _scalar(v)}
    incident = data.get("id") if str(data.get("resource_type")) == "incident" else None
    incident = incident or data.get("incident.summary")
    return View(data, fields, f"pd:{incident}" if incident else None)


def digest(text: str) -> str:
    """A short stable name for a group (its key may be long or hold anything)."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]
