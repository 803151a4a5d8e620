"""Serve ``coalmine view`` inside a test: the real app on 127.0.0.1, an ephemeral port."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from coalmine.view.app import ViewConfig, build_app


@contextmanager
def serving(store: Path, root: Path) -> Iterator[str]:
    """Serve the viewer over ``store`` on a thread with its own event loop; yield its URL."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="coalmine-view", daemon=True)
    thread.start()

    def call(coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=30)

    app = build_app(ViewConfig(store_path=store, root=root))
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    try:
        call(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        call(site.start())
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # noqa: SLF001
        yield f"http://127.0.0.1:{port}"
    finally:
        call(runner.cleanup())
        call(loop.shutdown_default_executor())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()
