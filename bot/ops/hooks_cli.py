"""`switchboard hooks test <name>`: send the running bot a sample payload of that hook's
kind (bot/ops/hooks_samples.py), signed as that kind's sender signs it, and say what
the bot answered. Exit status 0 on a 2xx, 1 otherwise, 2 for a hook not configured."""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request

from bot.ops.hooks_samples import encoded, sample, signed
from config.settings import Settings

TIMEOUT_SECONDS = 10.0


def hooks_command(settings: Settings, action: str, name: str) -> int:
    hook = next((h for h in settings.hooks if h.name == name), None)
    if action != "test" or hook is None:
        known = ", ".join(h.name for h in settings.hooks) or "none"
        print(f"switchboard: no hook named {name!r} in [[hooks]] (configured: {known})",
              file=sys.stderr)  # fmt: skip
        return 2
    payload = sample(hook.kind)
    if hook.kind == "alertmanager":  # a new notification each time, not a repeat
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for alert in payload["alerts"]:
            alert["startsAt"] = stamp
    body = encoded(payload)
    headers = signed(hook.kind, hook.secret.get_secret_value(), body)
    host = "127.0.0.1" if settings.http_host in ("0.0.0.0", "::", "") else settings.http_host
    url = f"http://{host}:{settings.listen_port}/hooks/{name}"
    return _post(url, body, headers)


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            status, answer = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, answer = exc.code, exc.read()
    except OSError as exc:
        print(f"switchboard: cannot reach {url} ({exc}); is `switchboard run` running?",
              file=sys.stderr)  # fmt: skip
        return 1
    try:
        shown = json.dumps(json.loads(answer))
    except ValueError:
        shown = answer.decode(errors="replace")[:200]
    print(f"{url}: {status} {shown}")
    return 0 if 200 <= status < 300 else 1
