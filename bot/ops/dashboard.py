"""The read-only dashboard at `/`: routes, login and access checks.

Pages: `/` (overview), `/conversations?q=..`, `/conversation?agent=..&key=..&page=..`,
`/events?type=..&agent=..&before=..`, `/audit?since=..`, `/catchup?person=..`; the live stream
`/events/stream`; `/login`. Every page has Sign out (with a token) and shows what an
action just did (`?done=`, bot/ops/flash.py). With
SWITCHBOARD_DASHBOARD_TOKEN set every page asks for it (a bearer header, or the
cookie the login form sets); a wrong or missing token gets 401.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from bot.ops import growth_view, views
from bot.ops.assets import SCRIPT, STYLE
from bot.ops.audit_view import audit_page
from bot.ops.auth import CSRF_FIELD, Access, client, refusal, throttled_response
from bot.ops.catchup_view import catchup_page
from bot.ops.charts import AnswerLatency, HourlySums, charts
from bot.ops.conv_view import ConversationIndex, conversations
from bot.ops.desk import OpsView
from bot.ops.events_view import events_page, recent_events
from bot.ops.flash import PARAM, Flashes
from bot.ops.growth_view import GrowthFigures
from bot.ops.hooks import Hooks
from bot.ops.hooks_card import hooks_card
from bot.ops.html import Markup, esc, page
from bot.ops.live import LiveEvents
from bot.ops.server import Handler, Route
from bot.ops.transcript_view import transcript

NO_STORE = {"Cache-Control": "no-store"}


@dataclass(frozen=True, slots=True)
class Figures:
    """What the operator keeps that the overview shows: the storage figures, answer
    latency and the hourly sums of the charts, the hooks (None: none configured)."""

    growth: GrowthFigures
    latency: AnswerLatency
    sums: HourlySums
    hooks: Hooks | None


class Dashboard:
    def __init__(self, view: OpsView, access: Access, live: LiveEvents, figures: Figures) -> None:
        self.view = view
        self.access = access
        self.live = live
        self.figures = figures
        self.flashes = Flashes()
        self.index = ConversationIndex()

    def routes(self) -> list[Route]:
        guard = self._guard
        return [
            ("GET", "/", guard(self.overview)),
            ("GET", "/conversations", guard(self.conversations)),
            ("GET", "/conversation", guard(self.conversation)),
            ("GET", "/events", guard(self.events)),
            ("GET", "/audit", guard(self.audit)),
            ("GET", "/catchup", guard(self.catchup)),
            ("GET", "/events/stream", guard(self.live.stream)),
            ("GET", "/login", self.login_form),
            ("POST", "/login", self.login),
            ("POST", "/logout", self.logout),
            ("GET", "/static/dashboard.js", _static(SCRIPT, "text/javascript")),
            ("GET", "/static/dashboard.css", _static(STYLE, "text/css")),
            ("GET", "/favicon.ico", _no_icon),
        ]

    def _guard(self, handler: Handler) -> Handler:
        async def guarded(request: web.Request) -> web.StreamResponse:
            wait = self.access.throttled(request)
            if wait:
                return throttled_response(wait)
            if self.access.allowed(request):
                return await handler(request)
            refused = refusal(self.access, request)
            if refused is not None:
                return refused
            if "Authorization" in request.headers or "text/html" not in request.headers.get(
                "Accept", ""
            ):
                return web.Response(
                    status=401,
                    text="401: SWITCHBOARD_DASHBOARD_TOKEN required",
                    headers={"WWW-Authenticate": 'Bearer realm="switchboard"', **NO_STORE},
                )
            return _html(_login_page(), status=401)

        return guarded

    # -- pages -------------------------------------------------------------------------
    def _csrf(self, request: web.Request) -> tuple[str, str]:
        """The forms' CSRF token, and the same for the sign-out button (none when open)."""
        csrf = self.access.csrf(request)
        return csrf, "" if self.access.open else csrf

    def _page(self, request: web.Request, title: str, body: Markup) -> web.Response:
        """A page with Sign out, the budget banner and what an action just did."""
        _csrf, sign_out = self._csrf(request)
        flash = self.flashes.shown(request.query.get(PARAM))
        banner = Markup((views.budget_banner(self.view) or "") + flash)
        return _html(page(title, body, banner, sign_out))

    async def overview(self, request: web.Request) -> web.Response:
        view, figures = self.view, self.figures
        csrf, _ = self._csrf(request)
        body = Markup("").join(
            [
                views.agents(view, _page(request), csrf),
                views.questions(view, csrf),
                views.approvals(view.store.approvals.pending(), csrf),
                views.channels(view),
                growth_view.card(figures.growth),  # data dir, database, WAL, pruning
                views.usage(view),
                charts(view, figures.latency, figures.sums),
                views.triggers(view, csrf),
                hooks_card(figures.hooks),
                recent_events(view),
            ]
        )
        return self._page(request, "Overview", Markup(body))

    async def conversations(self, request: web.Request) -> web.Response:
        csrf, _ = self._csrf(request)
        query = request.query.get("q", "").strip()[:200]
        body = conversations(self.view, self.index, query, _page(request), csrf)
        return self._page(request, "Conversations", body)

    async def conversation(self, request: web.Request) -> web.Response:
        agent = request.query.get("agent", "")
        key = request.query.get("key", "")
        raw = request.query.get("page")
        number = int(raw) if raw and raw.isdigit() else None
        title, body = transcript(self.view, agent, key, number, self._csrf(request)[0])
        return self._page(request, title, body)

    async def events(self, request: web.Request) -> web.Response:
        raw = request.query.get("before", "")
        before = int(raw) if raw.isdigit() else None
        kind = request.query.get("type", "").strip()[:100]
        agent = request.query.get("agent", "").strip()[:100]
        return self._page(request, "Events", events_page(self.view, kind, agent, before))

    async def audit(self, request: web.Request) -> web.Response:
        body = audit_page(self.view.store, request.query.get("since"))
        return self._page(request, "Audit", body)

    async def catchup(self, request: web.Request) -> web.Response:
        title, body = catchup_page(self.view, request.query.get("person", "").strip()[:200])
        return self._page(request, title, body)

    # -- login -------------------------------------------------------------------------
    async def login_form(self, request: web.Request) -> web.Response:
        return _html(_login_page())

    async def login(self, request: web.Request) -> web.StreamResponse:
        wait = self.access.throttled(request)
        if wait:
            return throttled_response(wait)
        form = await request.post()
        given = form.get("token")
        if not isinstance(given, str) or not self.access.token_matches(given.strip()):
            self.access.failures.failed(client(request))
            return _html(_login_page("That token is not right."), status=401)
        response = web.HTTPSeeOther("/")
        self.access.log_in(response)
        raise response

    async def logout(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        if not self.access.csrf_ok(request, form.get(CSRF_FIELD)):
            body = Markup('<p class="flash error">Nothing changed: reload the page.</p>')
            return _html(page("Nothing changed", body), status=403)
        response = web.HTTPSeeOther("/login")
        self.access.log_out(request, response)
        raise response


def _page(request: web.Request) -> int:
    raw = request.query.get("page", "1")
    return max(1, int(raw)) if raw.isdigit() else 1


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html", headers=NO_STORE)


def _static(body: str, content_type: str) -> Handler:
    async def serve(request: web.Request) -> web.Response:
        return web.Response(text=body, content_type=content_type)

    return serve


async def _no_icon(request: web.Request) -> web.Response:
    """Browsers ask every page load: no icon, and no 404 in the log."""
    return web.Response(status=204, headers={"Cache-Control": "max-age=86400"})


def _login_page(error: str = "") -> str:
    problem = f'<p class="error">{esc(error)}</p>' if error else ""
    form = Markup(
        '<form class="login" method="post" action="/login"><h2>Sign in</h2>'
        f"{problem}<label>Dashboard token (SWITCHBOARD_DASHBOARD_TOKEN)"
        '<input type="password" name="token" autocomplete="current-password" autofocus>'
        '</label><button type="submit">Sign in</button></form>'
    )
    return page("Sign in", form, nav=False)
