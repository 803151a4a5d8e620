"""Frames between the driver and a worker process: a 4-byte length, then a pickle.

Pickle is safe here because both ends are this package, in processes the driver started, over
pipes no one else holds; it is never read from a file or a socket.
"""

from __future__ import annotations

import asyncio
import pickle
import struct
from typing import IO, Any

HEADER = struct.Struct("<I")


def encode(message: Any) -> bytes:
    """``message`` as one frame."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


def decode(body: bytes) -> Any:
    """The message of a frame's body."""
    return pickle.loads(body)  # noqa: S301 - see the module's docstring


def describe_error(exc: BaseException) -> BaseException:
    """``exc`` if it crosses a pipe whole, else a plain error with its message."""
    try:
        pickle.loads(pickle.dumps(exc))  # noqa: S301
    except Exception:  # noqa: BLE001 - any exception that does not round-trip
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


class FramePipe:
    """Frames over a pair of pipes, on the running asyncio loop (writes never block it)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.WriteTransport):
        self._reader = reader
        self._writer = writer

    @classmethod
    async def open(cls, incoming: IO[bytes], outgoing: IO[bytes]) -> FramePipe:
        """Frames read from ``incoming`` and written to ``outgoing`` (binary, unbuffered)."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 26)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), incoming)
        writer, _ = await loop.connect_write_pipe(asyncio.Protocol, outgoing)
        return cls(reader, writer)

    def send(self, message: Any) -> None:
        """Queue ``message`` (it is written as the pipe takes it).

        Raises:
            ConnectionError: the other end is gone.
        """
        if self._writer.is_closing():
            raise ConnectionResetError("the pipe is closed")
        self._writer.write(encode(message))

    async def receive(self) -> Any:
        """The next message; None when the other end closed its pipe."""
        try:
            header = await self._reader.readexactly(HEADER.size)
            return decode(await self._reader.readexactly(HEADER.unpack(header)[0]))
        except (asyncio.IncompleteReadError, ConnectionError):
            return None

    async def drain(self) -> None:
        """Wait until every frame queued is in the pipe."""
        while not self._writer.is_closing() and self._writer.get_write_buffer_size():
            await asyncio.sleep(0.001)

    def close(self) -> None:
        """Close the writing end (the other end reads the end of its input)."""
        self._writer.close()
