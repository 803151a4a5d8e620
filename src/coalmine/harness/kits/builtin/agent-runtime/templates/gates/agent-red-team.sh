#!/usr/bin/env bash
# Owned by coalmine kit agent-runtime (see harness/manifest.json). Edit freely: `coalmine kits
# status` shows your edits and `coalmine kits update` merges kit updates.
#
# The prompt-injection red team (harness/evals/injection-red-team.*): instructions hidden in
# documents, tool results, emails and code must not leak the canary token or trigger a tool.
# With the red-team kit's packs (`coalmine redteam generate`), its tools, mcp, browser and
# general suites too (harness/evals/redteam-*.jsonl); `coalmine redteam report latest` groups
# what got through by severity and OWASP LLM Top 10 (2025).
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

suites=(injection-red-team)
for surface in tools mcp browser general; do
  [ -f "harness/evals/redteam-$surface.jsonl" ] && suites+=("redteam-$surface")
done

exec coalmine eval run "${suites[@]}" ${judge[@]+"${judge[@]}"} "$@"
