#!/usr/bin/env bash
# Owned by coalmine kit nix-project (see harness/manifest.json); edit freely:
# `coalmine kits status` shows your edits and `coalmine kits update` merges kit updates.
#
# With a flake.nix: nix flake check (options pass through: -L, --no-build …). Without one:
# shell.nix and default.nix must parse and instantiate (evaluate to derivations, no build).
set -euo pipefail
cd "$(dirname "$0")/.."

hint="install Nix from https://nixos.org/download (or https://determinate.systems/nix-installer)"

if [ -f flake.nix ]; then
  if ! command -v nix >/dev/null 2>&1; then
    echo "nix-flake-check: nix not found; $hint" >&2
    exit 127
  fi
  # flakes are still an experimental feature on a default Nix install
  exec nix --extra-experimental-features "nix-command flakes" flake check "$@"
fi

files=()
for file in shell.nix default.nix; do
  if [ -f "$file" ]; then files+=("$file"); fi
done
if [ ${#files[@]} -eq 0 ]; then
  echo "nix-flake-check: no flake.nix, shell.nix or default.nix in $(pwd)" >&2
  exit 1
fi
if ! command -v nix-instantiate >/dev/null 2>&1; then
  echo "nix-flake-check: nix-instantiate not found; $hint" >&2
  exit 127
fi
for file in "${files[@]}"; do
  echo "nix-flake-check: nix-instantiate --parse $file"
  nix-instantiate --parse "$file" >/dev/null
done
for file in "${files[@]}"; do
  echo "nix-flake-check: nix-instantiate $file"
  nix-instantiate "$@" "$file"
done
