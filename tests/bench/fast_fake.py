"""A Messages API that answers at once, in its own process, for latency benchmarks.

Run in-process, the test fake shares the GIL with the code being measured; here it does
not. It records each request's arrival (time.monotonic, comparable across processes on
one machine); `GET /arrivals` returns them. Usage: `python fast_fake.py` prints its port.
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


async def messages(request: web.Request) -> web.Response:
    arrivals.append(time.monotonic())
    await request.read()
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
