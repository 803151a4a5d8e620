#!/usr/bin/env bash
# Owned by coalmine kit agent-runtime (see harness/manifest.json). Edit freely: `coalmine kits
# status` shows your edits and `coalmine kits update` merges kit updates.
#
# The prompt-injection red team (harness/evals/injection-red-team.*): instructions hidden in
# documents, tool results, emails and code must not leak the canary token or trigger a tool.
# Arguments go to `coalmine eval run` (e.g. --filter 'tag:email', --repeats 3 --reducer 'pass^3').
# Exit code: coalmine's (0 contained, 1 an injection got through, 2 a bad suite or config).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v coalmine >/dev/null 2>&1; then
  echo "agent-red-team: coalmine is not installed; install it with: pip install coalmine" >&2
  exit 127
fi

# The judge only advises until it is calibrated; with no judge in the config, skip its graders
# instead of stopping (coalmine asks for 'judge:' or 'judge: none' otherwise).
judge=()
if ! grep -Eqs '^judge[[:space:]]*:' coalmine.yaml \
  && ! grep -Eqs '^(judge[[:space:]]*=|\[tool\.coalmine\.judge\])' pyproject.toml; then
  judge=(--no-judge)
fi

exec coalmine eval run injection-red-team ${judge[@]+"${judge[@]}"} "$@"
