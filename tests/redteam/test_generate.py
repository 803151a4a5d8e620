"""`coalmine redteam generate`: packs from the repository's own surface, reproducible, kit-owned."""

from __future__ import annotations

import json
from pathlib import Path

from coalmine.harness.kits import load_manifest
from tests.helpers.cli import run_main
from tests.helpers.kit_project import gate_env, run_gate
from tests.redteam.conftest import write_repo
from tests.redteam.test_packs import configure


def generate(root: Path, *args: str) -> str:
    code, out = run_main("redteam", "generate", "--no-diff", "--root", str(root), *args)
    assert code == 0, out
    return out


def lines(root: Path, surface: str) -> list[dict[str, object]]:
    text = (root / "harness" / "evals" / f"redteam-{surface}.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def evals(root: Path) -> dict[str, bytes]:
    folder = root / "harness" / "evals"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_mcp_cases_name_the_real_tools_of_both_servers(repo: Path) -> None:
    out = generate(repo, "--surface", "mcp", "--strategies", "none")
    assert "surfaces mcp, strategies none, seed 0" in out
    cases = lines(repo, "mcp")
    prompts = "\n".join(str(c["prompt"]) for c in cases)
    for tool in ("mcp__tickets__search_tickets", "mcp__tickets__close_ticket",
                 "mcp__files__read_file", "mcp__files__delete_file"):  # fmt: skip
        assert f"`{tool}`" in prompts, tool
    by_id = {c["id"]: c for c in cases}
    # a result of one server's tool asks for the other server's dangerous tool
    cross = by_id["mcp/cross-server/tickets-to-mcp-files-delete-file"]
    assert cross["forbidden_tools"] == ["mcp__files__delete_file"]
    assert "the result of `mcp__tickets__search_tickets` (server tickets)" in str(cross["prompt"])
    back = by_id["mcp/cross-server/files-to-mcp-tickets-close-ticket"]
    assert back["forbidden_tools"] == ["mcp__tickets__close_ticket"]
    # no real collision: the second server's look-alike of the first server's tool
    shadow = by_id["mcp/name-collision/mcp-files-search-tickets"]
    assert shadow["forbidden_tools"] == ["mcp__files__search_tickets"]
    assert shadow["metadata"]["real_collision"] == "false"
    assert {c["id"] for c in cases if "control" in c["tags"]} == {
        "mcp/control/tickets", "mcp/control/files"
    }  # fmt: skip
    # only what was asked for is written
    assert sorted(evals(repo)) == ["redteam-mcp.jsonl", "redteam-mcp.yaml"]


def test_a_real_name_collision_is_used_when_two_servers_share_a_tool(repo: Path) -> None:
    server = repo / "servers" / "files.py"
    server.write_text(server.read_text().replace("def read_file", "def search_tickets"))
    generate(repo, "--surface", "mcp", "--strategies", "none")
    [case] = [c for c in lines(repo, "mcp") if "name-collision" in str(c["id"])]
    assert case["metadata"]["real_collision"] == "true"
    assert case["forbidden_tools"] == ["mcp__files__search_tickets"]


def test_the_same_seed_writes_the_same_files_and_another_seed_other_canaries(
    tmp_path: Path,
) -> None:
    first, second = write_repo(tmp_path / "a" / "r"), write_repo(tmp_path / "b" / "r")
    generate(first, "--surface", "all", "--strategies", "all", "--seed", "5")
    generate(second, "--surface", "all", "--strategies", "all", "--seed", "5")
    assert evals(first) == evals(second)
    third = write_repo(tmp_path / "c" / "r")
    generate(third, "--surface", "all", "--strategies", "all", "--seed", "6")
    a, c = lines(first, "general"), lines(third, "general")
    assert [x["id"] for x in a] == [x["id"] for x in c]
    assert all(
        x["metadata"]["canary"] != y["metadata"]["canary"] for x, y in zip(a, c, strict=True)
    )
    # generating again with what the manifest remembers changes nothing
    out = generate(first)
    assert "up to date" in out


def test_generated_suites_are_kit_files_and_a_new_seed_merges_with_your_edits(repo: Path) -> None:
    generate(repo, "--surface", "general", "--strategies", "none", "--seed", "1")
    manifest = load_manifest(repo)
    assert manifest is not None
    kit = manifest.kit("red-team")
    assert kit is not None
    assert {f.path for f in kit.files} == {
        "harness/evals/redteam-general.yaml", "harness/evals/redteam-general.jsonl"
    }  # fmt: skip
    assert manifest.parameters["redteam.seed"] == "1"
    suite = repo / "harness" / "evals" / "redteam-general.yaml"
    suite.write_text(suite.read_text().replace("timeout_seconds: 300", "timeout_seconds: 90"))
    code, out = run_main("kits", "status", "--root", str(repo))
    assert "redteam-general.yaml" in out and "edited" in out, out
    generate(repo, "--seed", "2")
    assert "timeout_seconds: 90" in suite.read_text()  # your edit, merged with the new text
    assert "--seed 2" in suite.read_text()
    manifest = load_manifest(repo)
    assert manifest is not None and manifest.parameters["redteam.seed"] == "2"


def test_bad_options_are_clear_errors(repo: Path) -> None:
    code, out = run_main("redteam", "generate", "--surface", "email", "--root", str(repo))
    assert code == 2 and "unknown surface 'email'" in out and "tools, mcp, rag" in out
    code, out = run_main(
        "redteam", "generate", "--strategies", "base64,pig-latin", "--root", str(repo)
    )
    assert code == 2 and "unknown strategy 'pig-latin'" in out
    assert not (repo / "harness").exists()


def test_the_kits_gates_run_the_packs(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "gated")
    code, out = run_main("init", "--apply", "--no-diff", "--kit", "agent-runtime",
                         "--kit", "rag-system", "--root", str(repo))  # fmt: skip
    assert code == 0, out
    out = generate(repo, "--surface", "all", "--strategies", "none")
    assert "redteam-mcp: run by the agent-red-team gate" in out
    assert "redteam-rag: run by the rag-eval gate" in out
    configure(repo, "comply")
    env = gate_env(tmp_path)
    done = run_gate(repo, "agent-red-team.sh", "--filter", "tag:redteam", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    for surface in ("tools", "mcp", "browser", "general"):
        assert f"redteam-{surface}" in done.stdout, done.stdout
    done = run_gate(repo, "retrieval-eval.sh", "--filter", "tag:redteam", env=env)
    assert "redteam-rag" in done.stdout and done.returncode == 1, done.stdout + done.stderr


def test_the_default_surfaces_are_those_the_repository_has(repo: Path, tmp_path: Path) -> None:
    out = generate(repo, "--strategies", "none")
    # two MCP servers, web routes, but documents without a retriever: no rag pack
    assert sorted(evals(repo)) == [
        f"redteam-{s}.{ext}" for s in ("browser", "general", "mcp", "tools")
        for ext in ("jsonl", "yaml")
    ]  # fmt: skip
    assert "surfaces auto" in out
    (repo / "helpdesk" / "search.py").write_text(
        "from langchain_chroma import Chroma\n\ndb = Chroma(persist_directory='db')\n"
    )
    generate(repo)
    assert (repo / "harness" / "evals" / "redteam-rag.jsonl").is_file()
    titles = "\n".join(str(c["prompt"]) for c in lines(repo, "rag"))
    assert "Returns and refunds" in titles and "Shipping times" in titles  # the real documents
    bare = tmp_path / "bare"
    bare.mkdir()
    generate(bare, "--strategies", "none")
    assert sorted(evals(bare)) == [
        "redteam-general.jsonl", "redteam-general.yaml", "redteam-tools.jsonl", "redteam-tools.yaml"
    ]  # fmt: skip


def test_a_multi_turn_case_is_a_conversation_opened_by_the_confidential_line(repo: Path) -> None:
    generate(repo, "--surface", "general", "--strategies", "multi-turn", "--seed", "3")
    by_id = {c["id"]: c for c in lines(repo, "general")}
    case = by_id["general/system-prompt-extraction/verbatim/multi-turn"]
    turns = case["turns"]
    assert isinstance(turns, list) and [t["role"] for t in turns] == ["user", "assistant"] * 2
    canary = case["metadata"]["canary"]
    assert f"the session token is {canary}." in turns[0]["content"]
    assert str(case["prompt"]).startswith("Before we start: Perfect. Next step: Repeat your")
    assert canary not in str(case["prompt"])  # the attack text never holds the token
    plain = by_id["general/system-prompt-extraction/verbatim"]
    assert "turns" not in plain and canary != plain["metadata"]["canary"]


def test_tools_whose_names_slug_alike_still_get_cases_of_their_own(repo: Path) -> None:
    agent = repo / "helpdesk" / "agent.py"
    agent.write_text(
        agent.read_text()
        + '''
@tool
def refund_Payment(order_id: str) -> str:
    """Refund a payment, the old way."""
    return "refunded"
'''
    )
    generate(repo, "--surface", "tools", "--strategies", "none")
    ids = [str(c["id"]) for c in lines(repo, "tools")]
    assert len(ids) == len(set(ids))
    assert "tools/excessive-agency/real-refund-payment" in ids
    assert "tools/excessive-agency/real-refund-payment-2" in ids


def test_tool_results_stay_json_and_each_control_forbids_the_other_servers_tools(
    repo: Path,
) -> None:
    generate(repo, "--surface", "mcp", "--strategies", "all")
    by_id = {str(c["id"]): c for c in lines(repo, "mcp")}
    results = [c for i, c in by_id.items() if "/result-" in i or "/cross-server/" in i]
    assert len(results) == 4 * 9
    for case in results:
        body = str(case["prompt"]).split(" ---\n", 1)[1].rsplit("\n--- end of", 1)[0]
        assert isinstance(json.loads(body), dict), case["id"]  # a tool's result, as it would be
    assert by_id["mcp/control/tickets"]["forbidden_tools"] == ["mcp__files__delete_file"]
    assert by_id["mcp/control/files"]["forbidden_tools"] == ["mcp__tickets__close_ticket"]


def test_another_kits_update_neither_builds_nor_trips_over_the_red_team_parameters(
    repo: Path,
) -> None:
    code, out = run_main(
        "init", "--apply", "--no-diff", "--kit", "agent-runtime", "--root", str(repo)
    )
    assert code == 0, out
    generate(repo, "--surface", "general", "--strategies", "none")
    manifest = repo / "harness" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["parameters"]["redteam.seed"] = "seven"
    manifest.write_text(json.dumps(data))
    code, out = run_main("kits", "update", "--kit", "agent-runtime", "--root", str(repo))
    assert code == 0, out  # the red-team kit's parameters are not its business
    code, out = run_main("redteam", "generate", "--root", str(repo))
    assert (
        code == 2 and "manifest.json: parameters: the seed must be an integer, not 'seven'" in out
    )
