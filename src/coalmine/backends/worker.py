"""A worker process: forked from the driver, or ``python -m coalmine.backends.worker FACTORY``.

It reads an :class:`EngineSpec` from the driver, opens the engine and answers batches as they
come, many at a time. Two descriptors carry the frames alone; anything the engine, an agent or
a grader prints goes to stderr. SIGTERM, or the driver going away (end of input), cancels the
work in hand, so the agents' processes are ended as in any cancelled run. Ctrl-C is the
driver's to handle (it reaches every process of the terminal): a worker ignores it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import traceback
from typing import Any

import anyio

from coalmine.backends.engine import Engine, EngineSpec, load_factory, open_engine
from coalmine.backends.frames import FramePipe, describe_error
from coalmine.errors import first_error


def main() -> None:
    """Serve the driver on the moved stdin and stdout until it closes them."""
    frames_in, frames_out = os.dup(0), os.dup(1)
    if len(sys.argv) > 1:
        load_factory(sys.argv[1])  # imported now, while the driver plans
    serve(frames_in, frames_out)


def serve(frames_in: int, frames_out: int) -> None:
    """Serve the driver on these descriptors until it closes them.

    Standard input becomes ``/dev/null`` and standard output goes to stderr, so nothing an
    agent reads or prints meets the frames.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    quiet = os.open(os.devnull, os.O_RDONLY)
    os.dup2(quiet, 0)
    os.close(quiet)
    os.dup2(2, 1)
    try:
        asyncio.run(_serve(frames_in, frames_out))
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass


async def _serve(frames_in: int, frames_out: int) -> None:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    pipe = await FramePipe.open(os.fdopen(frames_in, "rb", 0), os.fdopen(frames_out, "wb", 0))
    hello = await pipe.receive()
    if hello is None:
        return
    spec: EngineSpec = hello[1]
    try:
        async with open_engine(spec) as engine:
            pipe.send(("ready",))
            await _answer(engine, pipe)
    except Exception as exc:  # noqa: BLE001 - told to the driver, which raises it
        pipe.send(("failed", describe_error(first_error(exc)), traceback.format_exc()))
    await _drained(pipe)


async def _answer(engine: Engine, pipe: FramePipe) -> None:
    async def answer(number: int, batch: list[Any]) -> None:
        try:
            results = await engine.run(batch)
            pipe.send(("result", number, results))  # a result that cannot pickle fails here
        except Exception as exc:  # noqa: BLE001 - told to the driver, which raises it
            # the batch's own error, not the task group around the engine's items
            error = describe_error(first_error(exc))
            pipe.send(("error", number, error, traceback.format_exc()))

    async with anyio.create_task_group() as tg:
        while True:
            message = await pipe.receive()
            if message is None:  # the driver is gone: nobody wants the answers
                tg.cancel_scope.cancel()
                return
            if message[0] == "batch":
                tg.start_soon(answer, message[1], message[2])
            else:  # "close": finish what is in hand, then leave
                return


async def _drained(pipe: FramePipe) -> None:
    """Let the last frames reach the pipe before the loop ends."""
    await pipe.drain()
    pipe.close()


if __name__ == "__main__":
    main()
