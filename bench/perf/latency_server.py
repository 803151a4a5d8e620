"""A loopback OpenAI-compatible chat server that answers every request after a fixed latency.

Run: python bench/perf/latency_server.py --latency 0.1 [--port 0]
Prints ``PORT <n>`` on stdout once listening. It is plain asyncio over raw streams (HTTP/1.1,
keep-alive, Content-Length bodies only), so that it spends next to nothing per request and a
benchmark measures the harness, not the server. It answers with the prompt's last word, so a
suite can grade the answers. ``GET /stats`` answers its counts as JSON: ``requests``,
``max_in_flight``, and ``first_in``/``last_out`` (``time.time()`` of the first request read and
of the last answer written: a client's wall time minus their span is what it spent outside the
requests).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

STATS = {"requests": 0, "in_flight": 0, "max_in_flight": 0, "first_in": None, "last_out": None}


async def handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            body = await reader.readexactly(length) if length else b""
            if head.startswith(b"GET /stats"):
                _answer(writer, json.dumps(STATS).encode())
                await writer.drain()
                continue
            STATS["requests"] += 1
            STATS["in_flight"] += 1
            STATS["max_in_flight"] = max(STATS["max_in_flight"], STATS["in_flight"])
            if STATS["first_in"] is None:
                STATS["first_in"] = time.time()
            prompt = json.loads(body)["messages"][-1]["content"] if body else ""
            if latency:
                await asyncio.sleep(latency)
            answer = prompt.rsplit(" ", 1)[-1]
            payload = json.dumps(
                {
                    "id": "bench",
                    "object": "chat.completion",
                    "model": "bench-model",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": answer},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
                }
            ).encode()
            STATS["in_flight"] -= 1
            STATS["last_out"] = time.time()
            _answer(writer, payload)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def _answer(writer: asyncio.StreamWriter, payload: bytes) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
        + str(len(payload)).encode()
        + b"\r\n\r\n"
        + payload
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, args.latency), "127.0.0.1", args.port, backlog=4096
    )
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
