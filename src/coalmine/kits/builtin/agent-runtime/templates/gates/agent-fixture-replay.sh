#!/usr/bin/env bash
# Owned by coalmine kit agent-runtime (see harness/manifest.json). Edit freely: `coalmine kits
# status` shows your edits and `coalmine kits update` merges kit updates.
#
# Replays the agent's recorded answers through agent-tool-safety and trajectory-goal-success.
# `coalmine eval run --cache` answers a call from the response cache of its run store when the
# same agent, with the same settings, was given the same prompt before; any other call goes to
# the agent and its answer is recorded. The recorded answers (the fixtures) are the store
# harness/fixtures/agent-runtime.db: when it exists, this gate replays from it; otherwise it
# calls the agent, caching in the default store (.coalmine/coalmine.db). Record the fixtures
# once, commit the file, and rerun this gate after each change to the suites or graders:
#
#   mkdir -p harness/fixtures && coalmine eval run agent-tool-safety trajectory-goal-success \
#     --cache --store harness/fixtures/agent-runtime.db
#
# Arguments go to `coalmine eval run` (e.g. --filter 'tag:git', --no-judge).
# Exit code: coalmine's (0 every case passed, 1 a blocking case failed, 2 a bad suite or config).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v coalmine >/dev/null 2>&1; then
  echo "agent-fixture-replay: coalmine is not installed; install it with: pip install coalmine" >&2
  exit 127
fi

fixtures=harness/fixtures/agent-runtime.db
store=()
if [ -f "$fixtures" ]; then
  echo "agent-fixture-replay: replaying the answers recorded in $fixtures" >&2
  store=(--store "$fixtures")
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

exec coalmine eval run agent-tool-safety trajectory-goal-success --cache \
  ${store[@]+"${store[@]}"} ${judge[@]+"${judge[@]}"} "$@"
