#!/usr/bin/env bash
# Owned by coalmine kit nix-project (see harness/manifest.json); edit freely:
# `coalmine kits status` shows your edits and `coalmine kits update` merges kit updates.
#
# Dev shell smoke, against harness/contracts/devshell.json:
#   1. direnv policy: .envrc loads the dev shell (use flake / use nix) exactly when the
#      contract says so;
#   2. substituters: every binary cache listed is in nix's configuration;
#   3. the dev shell starts (nix develop, or nix-shell) and every tool is on PATH inside it,
#      at the expected version. Each tool's version line is printed.
# Exit code: 1 when the contract is broken or a tool is missing; nix's own code when the shell
# fails to build; 127 when nix is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."

contract=harness/contracts/devshell.json
hint="install Nix from https://nixos.org/download (or https://determinate.systems/nix-installer)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Reads the contract, checks the direnv policy, writes the in-shell check to $work/check.sh,
# and prints the shell kind then one substituter per line.
plan=$(
  python3 - "$contract" "$work/check.sh" <<'PY'
import json, os, re, shlex, sys

path, check_path = sys.argv[1], sys.argv[2]
try:
    with open(path, encoding="utf-8") as f:
        c = json.load(f)
except (OSError, ValueError) as exc:
    sys.exit(f"dev-shell-smoke: cannot read {path}: {exc}")
problems = []
if not isinstance(c, dict) or c.get("schema") != "coalmine.contract.devshell.v1":
    sys.exit(f'dev-shell-smoke: {path}: schema must be "coalmine.contract.devshell.v1"')
shell = c.get("shell")
if shell not in ("flake", "nix-shell"):
    problems.append('shell must be "flake" or "nix-shell"')
tools = c.get("tools")
if not isinstance(tools, list):
    problems.append("tools must be a list")
    tools = []
for i, tool in enumerate(tools):
    ok = (
        isinstance(tool, dict)
        and isinstance(tool.get("command"), str) and tool["command"]
        and isinstance(tool.get("versionArgs", []), list)
        and all(isinstance(a, str) for a in tool.get("versionArgs", []))
        and isinstance(tool.get("versionContains") or "", str)
    )
    if not ok:
        problems.append(f"tools[{i}] needs a command, versionArgs (strings) and versionContains (string or null)")
subs = c.get("substituters", [])
if not isinstance(subs, list) or not all(isinstance(s, str) for s in subs):
    problems.append("substituters must be a list of URLs")
    subs = []
direnv = c.get("direnv")
if not isinstance(direnv, dict) or not isinstance(direnv.get("envrc"), bool) or direnv.get("use") not in ("flake", "nix", None):
    problems.append('direnv must be {"envrc": true|false, "use": "flake"|"nix"|null}')
else:
    text = ""
    if os.path.isfile(".envrc"):
        with open(".envrc", encoding="utf-8", errors="replace") as f:
            text = f.read()
    loads = sorted(set(re.findall(r"^[ \t]*use[ \t]+(flake|nix)\b", text, re.M)))
    want = [direnv["use"]] if direnv["use"] else ["flake", "nix"]
    if direnv["envrc"] and not text:
        problems.append("direnv.envrc is true but there is no .envrc (want a `use " + "|".join(want) + "` line)")
    elif direnv["envrc"] and not set(want) & set(loads):
        problems.append("direnv.envrc is true but .envrc has no `use " + "|".join(want) + "` line")
    elif not direnv["envrc"] and loads:
        problems.append(f"direnv.envrc is false but .envrc loads the dev shell (`use {loads[0]}`)")
if problems:
    print(f"dev-shell-smoke: {path} does not hold:", file=sys.stderr)
    for problem in problems:
        print(f"  - {problem}", file=sys.stderr)
    sys.exit(1)

lines = [
    "missing=()",
    "check() {  # command, expected version text, version arguments...",
    '  local cmd=$1 want=$2 where out version; shift 2',
    '  if ! where=$(command -v "$cmd"); then',
    '    echo "dev-shell-smoke: MISSING $cmd"; missing+=("$cmd"); return',
    "  fi",
    '  out=$("$cmd" "$@" 2>&1 </dev/null) || true',
    "  version=${out%%$'\\n'*}",
    '  if [ -n "$want" ] && [[ "$version" != *"$want"* ]]; then',
    '    echo "dev-shell-smoke: WRONG VERSION $cmd: \'$version\' lacks \'$want\'"; missing+=("$cmd ($want)"); return',
    "  fi",
    '  echo "dev-shell-smoke: ok $cmd ($where): $version"',
    "}",
]
for tool in tools:
    words = [tool["command"], tool.get("versionContains") or "", *tool.get("versionArgs", [])]
    lines.append("check " + " ".join(shlex.quote(w) for w in words))
if not tools:
    lines.append(f'echo "dev-shell-smoke: the shell started; no tools are listed in {path}" >&2')
lines += [
    'if [ ${#missing[@]} -gt 0 ]; then',
    '  echo "dev-shell-smoke: the dev shell lacks: ${missing[*]}" >&2; exit 1',
    "fi",
]
with open(check_path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
print(shell)
for s in subs:
    print(s)
PY
)

shell=""
substituters=()
while IFS= read -r line; do
  if [ -z "$shell" ]; then shell=$line; else substituters+=("$line"); fi
done <<<"$plan"

if [ "$shell" = flake ]; then
  enter=(nix --extra-experimental-features "nix-command flakes" develop --command bash "$work/check.sh")
  tool=nix
else
  enter=(nix-shell --run "bash $(printf %q "$work/check.sh")")
  tool=nix-shell
fi
if ! command -v "$tool" >/dev/null 2>&1; then
  echo "dev-shell-smoke: $tool not found; $hint" >&2
  exit 127
fi

if [ ${#substituters[@]} -gt 0 ]; then
  config=$(nix --extra-experimental-features nix-command config show 2>/dev/null ||
    nix --extra-experimental-features nix-command show-config)
  unused=()
  for cache in "${substituters[@]}"; do
    case "$config" in
      *"$cache"*) echo "dev-shell-smoke: cache $cache is configured" ;;
      *) unused+=("$cache") ;;
    esac
  done
  if [ ${#unused[@]} -gt 0 ]; then
    echo "dev-shell-smoke: nix is not configured to use: ${unused[*]} (add them to nix.conf or accept the flake's nixConfig)" >&2
    exit 1
  fi
fi

echo "dev-shell-smoke: entering the dev shell: ${enter[*]:0:5}"
status=0
"${enter[@]}" || status=$?
exit "$status"
