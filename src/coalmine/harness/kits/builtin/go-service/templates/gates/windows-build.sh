#!/usr/bin/env bash
# Owned by coalmine kit go-service (see harness/manifest.json); edit freely:
# `coalmine kits status` shows your edits and `coalmine kits update` merges kit updates.
#
# Windows build: checks harness/contracts/windows-service.json, then cross-compiles its
# `packages` with GOOS=windows GOARCH=amd64 (WINDOWS_GOARCH=arm64 for ARM) into a temporary
# folder and checks the service binary was built. Options pass through to go build (-tags …).
# Installing, starting and stopping the service (the contract's `lifecycle`) needs Windows:
# exercise it on a Windows runner.
set -euo pipefail
cd "$(dirname "$0")/.."

contract=harness/contracts/windows-service.json
if ! command -v go >/dev/null 2>&1; then
  echo "windows-build: go not found; install Go from https://go.dev/dl/ and put it on PATH" >&2
  exit 127
fi

# The contract's shape; prints the service binary (or "-"), then one package per line.
plan=$(
  python3 - "$contract" <<'PY'
import json, sys

path = sys.argv[1]
try:
    with open(path, encoding="utf-8") as f:
        c = json.load(f)
except (OSError, ValueError) as exc:
    sys.exit(f"windows-build: cannot read {path}: {exc}")
problems = []
if not isinstance(c, dict):
    sys.exit(f"windows-build: {path}: not a JSON object")
if c.get("schema") != "coalmine.contract.windows-service.v1":
    problems.append('schema must be "coalmine.contract.windows-service.v1"')
service = c.get("service")
if not isinstance(service, dict):
    problems.append("service must be an object")
    service = {}
name = service.get("name")
if not isinstance(name, str) or not name or any(ch in name for ch in "/\\"):
    problems.append("service.name must be a non-empty name without / or \\")
binary = service.get("binary")
if binary is not None and not (isinstance(binary, str) and binary.endswith(".exe")):
    problems.append("service.binary must end in .exe (or be null when there is no service binary)")
packages = c.get("packages")
if not isinstance(packages, list) or not packages or not all(isinstance(p, str) and p for p in packages):
    problems.append('packages must be a non-empty list of Go packages, like ["./cmd/server"]')
    packages = []
package = service.get("package")
if package is not None and package not in packages and "./..." not in packages:
    problems.append(f"service.package {package!r} is not in packages")
steps = c.get("lifecycle")
if not isinstance(steps, list):
    problems.append("lifecycle must be a list of steps")
    steps = []
for i, step in enumerate(steps):
    where = f"lifecycle[{i}]"
    if not isinstance(step, dict):
        problems.append(f"{where} must be an object")
        continue
    if step.get("step") not in ("install", "start", "stop", "uninstall"):
        problems.append(f"{where}.step must be install, start, stop or uninstall")
    if not isinstance(step.get("powershell"), str) or not step["powershell"].strip():
        problems.append(f"{where}.powershell must be a command")
    if step.get("expectState") not in ("Running", "Stopped", "Absent"):
        problems.append(f"{where}.expectState must be Running, Stopped or Absent")
    within = step.get("withinSeconds")
    if isinstance(within, bool) or not isinstance(within, (int, float)) or within <= 0:
        problems.append(f"{where}.withinSeconds must be a positive number")
named = {s.get("step") for s in steps if isinstance(s, dict)}
missing = [s for s in ("install", "start", "stop") if s not in named]
if missing:
    problems.append("lifecycle has no " + ", ".join(missing) + " step")
if problems:
    print(f"windows-build: {path} breaks the contract:", file=sys.stderr)
    for problem in problems:
        print(f"  - {problem}", file=sys.stderr)
    sys.exit(1)
print(binary or "-")
print("\n".join(packages))
PY
)

binary=""
packages=()
while IFS= read -r line; do
  if [ -z "$binary" ]; then binary=$line; else packages+=("$line"); fi
done <<<"$plan"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
arch=${WINDOWS_GOARCH:-amd64}
# Each module builds its own packages (the nearest go.mod above each), so a repository of
# several modules builds without a go.work; with one, go finds it from each module too.
module_of() {
  local dir=${1#./}
  dir=${dir%/...}
  while [ -n "$dir" ] && [ "$dir" != "." ] && [ ! -f "$dir/go.mod" ]; do
    case $dir in */*) dir=${dir%/*} ;; *) dir=. ;; esac
  done
  echo "${dir:-.}"
}
declare -A inside=()
modules=()
for package in "${packages[@]}"; do
  module=$(module_of "$package")
  rel=${package#./}
  [ "$module" = "." ] || rel=${rel#"$module"}
  rel=./${rel#/}
  [ "$rel" = "./" ] && rel=.
  [ -n "${inside[$module]+x}" ] || modules+=("$module")
  inside[$module]="${inside[$module]:-}${inside[$module]:+ }$rel"
done
for module in "${modules[@]}"; do
  read -r -a these <<<"${inside[$module]}"
  where=""
  [ "$module" = "." ] || where=" (in module $module)"
  echo "windows-build: GOOS=windows GOARCH=$arch go build ${these[*]}$where"
  (cd "$module" && GOOS=windows GOARCH=$arch go build -o "$out/" "$@" "${these[@]}")
done

for built in "$out"/*; do
  [ -e "$built" ] && echo "windows-build: built ${built##*/}"
done
if [ "$binary" != "-" ] && [ ! -f "$out/$binary" ]; then
  echo "windows-build: the service binary $binary (service.binary in $contract) was not built; fix service.package/binary or packages" >&2
  exit 1
fi
