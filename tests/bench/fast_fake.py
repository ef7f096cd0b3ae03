"""A Messages API that answers at once, in its own process, for latency benchmarks.

Run in-process, the test fake shares the GIL with the code being measured; here it does
not. It records each request's arrival (time.monotonic, comparable across processes on
one machine); `GET /arrivals` returns them. Usage: `python fast_fake.py` prints its port.
A request with `"stream": true` (the runtime streams every call) is answered with the
server-sent events the real API writes for the same message, built once.
"""

from __future__ import annotations

import json
import time

from aiohttp import web

REPLY = {
    "id": "msg_bench",
    "type": "message",
    "role": "assistant",
    "model": "bench",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 1},
}
arrivals: list[float] = []


def _sse(event: str, data: dict[str, object]) -> str:
    return f"event: {event}\ndata: {json.dumps({'type': event, **data})}\n\n"


STREAM = "".join(
    (
        _sse("message_start", {"message": {**REPLY, "content": [], "stop_reason": None}}),
        _sse("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        _sse("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
        _sse("content_block_stop", {"index": 0}),
        _sse(
            "message_delta",
            {
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        ),
        _sse("message_stop", {}),
    )
)


async def messages(request: web.Request) -> web.Response:
    arrivals.append(time.monotonic())
    body = await request.json()
    if body.get("stream"):
        return web.Response(text=STREAM, content_type="text/event-stream")
    return web.Response(text=json.dumps(REPLY), content_type="application/json")


async def get_arrivals(request: web.Request) -> web.Response:
    return web.json_response(arrivals)


async def main() -> None:
    app = web.Application()
    app.router.add_post("/v1/messages", messages)
    app.router.add_get("/arrivals", get_arrivals)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)  # type: ignore[union-attr]
    while True:
        await __import__("asyncio").sleep(3600)


if __name__ == "__main__":
    import asyncio

    asyncio.run(main())
