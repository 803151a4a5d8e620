"""``coalmine profile``: what the repository is made of, with evidence, and the kits that apply."""

from __future__ import annotations

import json
from pathlib import Path

import click

from coalmine.harness.profile import Profile, profile_repository


@click.command("profile")
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The repository to scan.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the profile (coalmine.profile.v1) as JSON."
)
def profile_command(root: Path, as_json: bool) -> int:
    """Profile the repository (read-only): its signals with evidence, and the kits that apply.

    Signals: languages, package managers, agent runtimes, retrieval, web UI, Go services, Nix,
    Charm, CI and eval harnesses, each with evidence (file and line). Respects .gitignore;
    never writes and never runs the project's code.
    """
    profile = profile_repository(root)
    if as_json:
        click.echo(json.dumps(profile.model_dump(mode="json", by_alias=True), indent=2))
    else:
        click.echo(render_profile(profile))
    return 0


def render_profile(profile: Profile) -> str:
    """The profile as a plain table (kind, evidence count, first evidence) and the kits."""
    rows = [("KIND", "EVIDENCE", "FIRST")]
    for signal in profile.signals:
        first = signal.evidence[0]
        where = first.path if first.line is None else f"{first.path}:{first.line}"
        count = str(len(signal.evidence))
        rows.append((signal.kind, count + ("+" if count == "10" else ""), where))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    lines = [
        f"{row[0].ljust(widths[0])}  {row[1].rjust(widths[1])}  {row[2]}".rstrip() for row in rows
    ]
    if not profile.signals:
        lines = ["no signals"]
    kits = ", ".join(profile.applicable_kits) or "none"
    lines += ["", f"{profile.files_scanned} files scanned in {profile.root}", f"kits: {kits}"]
    return "\n".join(lines)
