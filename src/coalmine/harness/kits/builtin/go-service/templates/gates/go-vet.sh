#!/usr/bin/env bash
# Owned by coalmine kit go-service (see harness/manifest.json); edit freely:
# `coalmine kits status` shows your edits and `coalmine kits update` merges kit updates.
#
# go vet over every package of the module. Options pass through, before the packages.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v go >/dev/null 2>&1; then
  echo "go-vet: go not found; install Go from https://go.dev/dl/ and put it on PATH" >&2
  exit 127
fi
exec go vet "$@" ./...
