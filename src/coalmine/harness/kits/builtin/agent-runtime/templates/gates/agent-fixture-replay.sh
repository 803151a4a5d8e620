#!/usr/bin/env bash
# Owned by coalmine kit agent-runtime (see harness/manifest.json). Edit freely: `coalmine kits
# status` shows your edits and `coalmine kits update` merges kit updates.
#
# Replays the agent's recorded answers through agent-tool-safety and trajectory-goal-success:
# a change to the suites or graders is checked against answers the agent really gave, with no
# agent, model or network. The fixtures are a cassette, harness/fixtures/agent-runtime.jsonl
# (JSON lines, secrets scrubbed); record it once, review and commit it, and record it again
# when the agent changes on purpose:
#
#   coalmine eval run agent-tool-safety trajectory-goal-success \
#     --record harness/fixtures/agent-runtime.jsonl
#
# Without a cassette this gate calls the agent live.
# Arguments go to `coalmine eval run` (e.g. --filter 'tag:git', --no-judge).
# Exit code: coalmine's (0 every case passed, 1 a blocking case failed, 2 a bad suite or config
# or a call the cassette does not hold).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v coalmine >/dev/null 2>&1; then
  echo "agent-fixture-replay: coalmine is not installed; install it with: pip install coalmine" >&2
  exit 127
fi

fixtures=harness/fixtures/agent-runtime.jsonl
replay=()
if [ -f "$fixtures" ]; then
  echo "agent-fixture-replay: replaying the answers recorded in $fixtures" >&2
  replay=(--replay "$fixtures")
else
  echo "agent-fixture-replay: no recorded answers in $fixtures yet, so the agent is called" \
    "(see the top of gates/agent-fixture-replay.sh to record them)" >&2
fi

# The judge only advises until it is calibrated; with no judge in the config, skip its graders
# instead of stopping (coalmine asks for 'judge:' or 'judge: none' otherwise).
judge=()
if ! grep -Eqs '^judge[[:space:]]*:' coalmine.yaml \
  && ! grep -Eqs '^(judge[[:space:]]*=|\[tool\.coalmine\.judge\])' pyproject.toml; then
  judge=(--no-judge)
fi

exec coalmine eval run agent-tool-safety trajectory-goal-success \
  ${replay[@]+"${replay[@]}"} ${judge[@]+"${judge[@]}"} "$@"
