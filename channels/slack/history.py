"""Reading Slack history: `conversations.history` / `conversations.replies`, paged.

Both are cursor-paged (`response_metadata.next_cursor`), Tier 3 rate-limited, and
answer HTTP 429 with `Retry-After` when read too fast. `read` follows the cursor and,
when `patient`, waits out each 429 for exactly Slack's `Retry-After` and asks for the
same page again (catch-up); otherwise the rate limit is raised as it came (a lookup in
the outbox's delivery, which the outbox retries after that delay). Messages come with
their `metadata` (`include_all_metadata`), which is how a post of ours is found again.
Used by the poster (`post.py`, finding a post whose answer was lost) and by catch-up
(`catchup.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from channels.errors import ChannelError
from channels.slack.identity import header

log = logging.getLogger(__name__)

PAGE = 200  # Slack's advised page size (at most 1,000; 200 keeps each answer fast)
MAX_RATE_WAITS = 20  # 429s waited out in one read before giving up on it


class HistoryError(ChannelError):
    """A read Slack refused: `error` is Slack's code (`not_in_channel`, ...)."""

    def __init__(self, error: str, retry_after: float | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.retry_after = retry_after


async def read(
    client: AsyncWebClient,
    method: str,
    *,
    patient: bool,
    max_pages: int,
    **args: Any,
) -> AsyncIterator[dict[str, Any]]:
    """Every message of `method` (`conversations.history` or `conversations.replies`)
    with `args`, page after page, at most `max_pages` pages."""
    cursor: str | None = None
    waits = 0
    for _ in range(max_pages):
        params = {**args, "limit": PAGE, "include_all_metadata": True}
        if cursor:
            params["cursor"] = cursor
        try:
            response = await client.api_call(method, http_verb="GET", params=params)
        except SlackApiError as exc:
            problem = _problem(exc)
            if problem.retry_after is None or not patient or waits >= MAX_RATE_WAITS:
                raise problem from exc
            waits += 1
            log.info("Slack %s rate-limited; waiting %.1fs", method, problem.retry_after)
            await asyncio.sleep(problem.retry_after)
            continue  # the same page again
        for message in response.get("messages") or []:
            yield message
        cursor = (response.get("response_metadata") or {}).get("next_cursor") or None
        if not cursor:
            return


def _problem(exc: SlackApiError) -> HistoryError:
    status = exc.response.status_code
    data = exc.response.data if isinstance(exc.response.data, dict) else {}
    error = str(data.get("error") or f"HTTP {status}")
    if status == 429 or error == "ratelimited":
        try:
            wait = float(header(exc.response.headers, "retry-after") or 1)
        except ValueError:
            wait = 1.0
        return HistoryError(error, max(0.0, wait))
    if data.get("needed"):
        error += f" (needs {data['needed']})"
    return HistoryError(error)


def ts_key(ts: str) -> tuple[int, int]:
    """Slack `ts` strings ("1700000000.000100") in time order."""
    seconds, _, micros = ts.partition(".")
    return int(seconds), int(micros or 0)
