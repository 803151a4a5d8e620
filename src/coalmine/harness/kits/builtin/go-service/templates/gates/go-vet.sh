#!/usr/bin/env bash
# Owned by coalmine kit go-service (see harness/manifest.json); edit freely:
# `coalmine kits status` shows your edits and `coalmine kits update` merges kit updates.
#
# go vet over every package of every Go module of the repository (nested modules too). Options pass through, before the packages.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v go >/dev/null 2>&1; then
  echo "go-vet: go not found; install Go from https://go.dev/dl/ and put it on PATH" >&2
  exit 127
fi
# Every Go module of the repository (each folder with a go.mod: nested examples/ modules too).
modules=()
while IFS= read -r mod; do
  modules+=("$(dirname "$mod")")
done < <(find . -name go.mod -not -path '*/vendor/*' -not -path '*/testdata/*' \
  -not -path '*/node_modules/*' -not -path './.git/*' -not -path './.coalmine/*' | LC_ALL=C sort)
if [ "${#modules[@]}" -eq 0 ]; then
  echo "go-vet: no go.mod in this repository" >&2
  exit 1
fi
status=0
for mod in "${modules[@]}"; do
  echo "go-vet: $mod: go vet $* ./..."
  (cd "$mod" && go vet "$@" ./...) || status=$?
done
exit "$status"
