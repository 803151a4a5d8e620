"""``coalmine view``: serve the run store as a local web app."""

from __future__ import annotations

import webbrowser
from pathlib import Path

import anyio
import click

from coalmine.cli.options import root_option, store_option
from coalmine.engine.history import open_store, project_store_path


@click.command("view")
@root_option
@store_option
@click.option("--port", type=click.IntRange(0, 65535), default=8787, show_default=True,
              help="The port to listen on (0: any free one).")  # fmt: skip
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to bind (another than 127.0.0.1 only on purpose).")  # fmt: skip
@click.option("--open", "open_browser", is_flag=True, help="Open the URL in a browser.")
def view_command(
    root: Path, store_path: Path | None, port: int, host: str, open_browser: bool
) -> int:
    """Browse the run store in a local web app: runs, cases, comparisons, judges, labelling.

    Serves on 127.0.0.1 (--host binds another address) until you press Ctrl-C. The store is
    read-only to it and a run may write to it meanwhile; labels are written to the .jsonl file
    you name, inside the project.
    """
    from coalmine.view.app import ViewConfig, serve

    path = store_path or project_store_path(root)
    # brings an older store's schema up to date; a clear error now for one missing or unusable
    open_store(root, path=path, create="never").close()
    if host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"warning: serving on {host}: anyone who can reach it can read the store",
                   err=True)  # fmt: skip
    config = ViewConfig(store_path=path, root=root.resolve(), host=host, port=port)

    def ready(url: str) -> None:
        click.echo(f"coalmine view: {url} (Ctrl-C stops it)", err=False)
        if open_browser:
            webbrowser.open(url)

    try:
        anyio.run(lambda: serve(config, ready=ready))
    except KeyboardInterrupt:
        click.echo("stopped")
    return 0
