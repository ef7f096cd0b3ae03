"""The dashboard is never open to the network (security review #5, #21): someone on the HTTP
port behind a proxy, or guessing tokens."""

from __future__ import annotations

import re
import stat
import subprocess
from pathlib import Path

import aiohttp

from bot.ops.throttle import Throttle
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.ops_kit import get, served_app

ROOT = Path(__file__).resolve().parents[2]


TOKEN = "a-dashboard-token-for-tests-0123"


HTML = {"Accept": "text/html"}


# -- #5: the dashboard is never open to the network ------------------------------------
PROXY_HEADERS = [
    {"X-Forwarded-For": "203.0.113.9"},
    {"Forwarded": "for=203.0.113.9;proto=https"},
    {"X-Forwarded-Host": "bot.example.com"},
    {"X-Real-IP": "203.0.113.9"},
]


async def test_d6_a_forwarded_request_to_a_dashboard_without_a_token_is_refused(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    """nginx's default `Host` is the upstream's own 127.0.0.1:<port>: only the proxy
    headers tell the request came from the network."""
    async with served_app(tmp_path, fake) as (_app, _channel, url):
        host = {"Host": url.removeprefix("http://")}
        for headers in PROXY_HEADERS:
            for path in ("/", "/audit", "/events/stream"):
                status, text, _ = await get(url + path, headers={**host, **headers})
                assert status == 403, (path, headers)
                assert text.startswith("403: this request came through a proxy")
                assert text.count(". ") == 0 and text.endswith("behind a proxy.")
            async with aiohttp.ClientSession() as session, session.post(
                url + "/actions/decide", data={"approval": "x", "decision": "approve"},
                headers={**host, **headers},
            ) as response:  # fmt: skip
                assert response.status == 403
                assert "came through a proxy" in await response.text()
        status, text, _ = await get(url + "/", headers=host)  # on the machine itself: open
    assert status == 200 and "Recent events" in text


async def test_d6_with_a_token_a_forwarded_request_signs_in_as_before(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}", "X-Forwarded-For": "203.0.113.9"}
    async with served_app(tmp_path, fake, SWITCHBOARD_DASHBOARD_TOKEN=TOKEN) as (_a, _c, url):
        anonymous = await get(url + "/", headers={**HTML, "X-Forwarded-For": "203.0.113.9"})
        signed = await get(url + "/", headers=bearer)
    assert anonymous[0] == 401 and signed[0] == 200


def _unit_script(unit: str, state_dir: Path) -> str:
    """The unit's ExecStartPre as /bin/sh gets it (systemd turns `$$` into `$`), its
    state directory moved to `state_dir`."""
    line = next(x for x in unit.splitlines() if x.startswith("ExecStartPre="))
    match = re.fullmatch(r"ExecStartPre=/bin/sh -c '(.*)'", line)
    assert match is not None, line
    return match.group(1).replace("$$", "$").replace("/var/lib/switchboard", str(state_dir))


def test_d6_the_systemd_unit_makes_a_dashboard_token_before_it_starts(tmp_path: Path) -> None:
    unit = (ROOT / "config" / "switchboard.service").read_text()
    files = [x.split("=", 1)[1] for x in unit.splitlines() if x.startswith("EnvironmentFile=")]
    # the generated token first: a token in the operator's own env file wins over it
    assert files == ["-/var/lib/switchboard/dashboard.env", "/etc/switchboard/env"]
    assert "UMask=0077" in unit.splitlines()
    script = _unit_script(unit, tmp_path)
    made = tmp_path / "dashboard.env"
    subprocess.run(["/bin/sh", "-c", script], check=True, timeout=30)
    first = made.read_text()
    assert re.fullmatch(r"SWITCHBOARD_DASHBOARD_TOKEN=[0-9a-f]{48}\n", first)
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    subprocess.run(["/bin/sh", "-c", script], check=True, timeout=30)
    assert made.read_text() == first  # made once, kept across restarts
    made.write_text("SWITCHBOARD_DASHBOARD_TOKEN=\n")  # emptied by hand: no start
    done = subprocess.run(["/bin/sh", "-c", script], timeout=30)
    assert done.returncode != 0


def test_d6_the_readme_proxy_advice_comes_with_the_token() -> None:
    readme = (ROOT / "docs" / "operations.md").read_text()
    deployment = readme.split("## Deployment", 1)[1].split("\n## ", 1)[0]
    proxy = next(p for p in deployment.split("\n\n") if "TLS proxy" in p)
    assert "dashboard.env" in proxy and "the token is what guards it" in proxy


# -- #21: wrong tokens are slowed down -------------------------------------------------
async def test_d5_after_five_wrong_tokens_a_minute_the_address_waits(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    async with served_app(tmp_path, fake, SWITCHBOARD_DASHBOARD_TOKEN=TOKEN) as (app, _c, url):
        async with aiohttp.ClientSession() as session:
            statuses = []
            for n in range(5):
                async with session.post(url + "/login", data={"token": f"guess-{n}"}) as r:
                    statuses.append(r.status)
            async with session.post(url + "/login", data={"token": TOKEN}) as r:
                blocked, text, retry = r.status, await r.text(), r.headers.get("Retry-After")
            async with session.get(url + "/", headers={"Authorization": f"Bearer {TOKEN}"}) as r:
                bearer_blocked = r.status
        assert statuses == [401] * 5
        assert blocked == 429 and retry is not None and 1 <= int(retry) <= 60
        assert text.startswith("429: too many wrong tokens from this address;")
        assert bearer_blocked == 429  # the right token too: no oracle while blocked
        app.ops.access.failures = Throttle()  # a minute later (the clock is tested below)
        async with aiohttp.ClientSession() as session:
            for n in range(5):  # wrong bearer tokens count as well
                bad = {"Authorization": f"Bearer wrong-{n}"}
                async with session.get(url + "/audit", headers=bad) as r:
                    assert r.status == 401
            async with session.get(url + "/audit", headers={"Authorization": "Bearer x"}) as r:
                assert r.status == 429


def test_d5_the_wait_ends_a_minute_after_the_oldest_failure() -> None:
    now = [1000.0]
    throttle = Throttle(limit=5, window=60.0, clock=lambda: now[0])
    for _ in range(4):
        throttle.failed("203.0.113.9")
        now[0] += 1
    assert throttle.wait("203.0.113.9") == 0.0  # four: still welcome
    throttle.failed("203.0.113.9")
    assert throttle.wait("203.0.113.9") == 56.0 and throttle.wait("198.51.100.1") == 0.0
    now[0] += 56
    assert throttle.wait("203.0.113.9") == 0.0
