"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from coalmine.engine.policy import BLOCKING_GATE_ENV

F = TypeVar("F", bound=Callable[..., Any])

root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Project root: holds coalmine.yaml (or pyproject.toml) and bench/canaries/.",
)

store_option = click.option(
    "--store",
    "store_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The run store's database (default: 'store:' of the config, .coalmine/coalmine.db).",
)


def resume_option(kind: str) -> Callable[[F], F]:
    """``--resume [RUN_ID]``: finish an unfinished run of ``kind``."""
    return click.option(
        "--resume",
        is_flag=False,
        flag_value="latest",
        default=None,
        metavar="[RUN_ID]",
        help=f"Finish an interrupted or killed {kind} run (default: the latest unfinished one).",
    )


cache_option = click.option(
    "--cache", is_flag=True, default=None, help="Answer repeated calls from the cache."
)

judge_reruns_option = click.option(
    "--judge-reruns",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Ask the judge N times per judge grade; the majority decides, a split is flagged.",
)

display_option = click.option(
    "--display",
    type=click.Choice(["auto", "rich", "plain", "jsonl", "none"]),
    default="auto",
    show_default=True,
    help="Progress on stderr: rich on a terminal, plain lines otherwise.",
)


def parse_report(value: str) -> tuple[str, Path]:
    """Split ``FORMAT:PATH`` (e.g. ``junit:out/junit.xml``)."""
    fmt, sep, path = value.partition(":")
    if not sep or not fmt or not path:
        raise click.BadParameter(f"{value!r}: write FORMAT:PATH, e.g. junit:reports/junit.xml")
    return fmt, Path(path)


blocking_gate_option = click.option(
    "--blocking-gate",
    metavar="GATE",
    envvar=BLOCKING_GATE_ENV,
    help="Run for the blocking gate GATE: every suite and canary blocks, whatever its "
    f"'blocking: false' says (`gates run` sets it, through {BLOCKING_GATE_ENV}).",
)

record_option = click.option(
    "--record",
    "record_to",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write every answer agents and the judge give to this cassette (JSON lines).",
)
replay_option = click.option(
    "--replay",
    "replay_from",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Answer every call from this cassette: no agent runs, no network is used.",
)


workers_option = click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Spread the cases over N engines: worker processes (with --backend ray, actors); "
    "every agent's limits hold across them together. Default: one per core for a run of at "
    "least 2000 case runs at --concurrency 64 or more, else 1 (with --backend ray: the "
    "cluster's CPUs).",
)

backend_option = click.option(
    "--backend",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where the engines run: this machine, or a Ray cluster (pip install 'coalmine[ray]').",
)

address_option = click.option(
    "--address",
    metavar="auto|ray://HOST:PORT",
    help="With --backend ray: the cluster to join (default: RAY_ADDRESS, else a local one "
    "started for the run).",
)
