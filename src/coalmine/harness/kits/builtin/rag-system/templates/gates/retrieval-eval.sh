#!/usr/bin/env bash
# Owned by coalmine kit rag-system (see harness/manifest.json). Edit freely: `coalmine kits
# status` shows your edits and `coalmine kits update` merges kit updates.
#
# Retrieval evals: known-item recall (recall@5, MRR, NDCG@5), near misses (the right document
# first, its look-alike never above it) and answer faithfulness to the context (judge,
# advisory until calibrated). With the red-team kit's rag pack (`coalmine redteam generate`),
# harness/evals/redteam-rag too: injected, poisoned and leaking documents.
# Arguments go to `coalmine eval run` (e.g. --filter 'tag:near-miss').
# Exit code: coalmine's (0 every suite held, 1 a blocking suite failed, 2 a bad suite or config).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v coalmine >/dev/null 2>&1; then
  echo "retrieval-eval: coalmine is not installed; install it with: pip install coalmine" >&2
  exit 127
fi

# The judge only advises until it is calibrated; with no judge in the config, skip its graders
# instead of stopping (coalmine asks for 'judge:' or 'judge: none' otherwise).
judge=()
if ! grep -Eqs '^judge[[:space:]]*:' coalmine.yaml \
  && ! grep -Eqs '^(judge[[:space:]]*=|\[tool\.coalmine\.judge\])' pyproject.toml; then
  judge=(--no-judge)
fi

suites=(retrieval-recall structural-near-misses context-faithfulness)
[ -f harness/evals/redteam-rag.jsonl ] && suites+=(redteam-rag)

exec coalmine eval run "${suites[@]}" ${judge[@]+"${judge[@]}"} "$@"
