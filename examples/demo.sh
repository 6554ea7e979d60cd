#!/usr/bin/env bash
# The `make demo` script: index the example workspace, then a few searches and one read.
# Usage: examples/demo.sh [memory-router command]   (default: .venv/bin/memory-router)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mr="${1:-.venv/bin/memory-router}"
config=examples/demo.toml
# Offline: the model ships in a Python package; nothing may reach the network.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

step() {
    printf '\n\033[1m$ memory-router %s\033[0m\n' "$*"
    "$mr" --config "$config" "$@"
}

step index
# The first three queries share no word with the note they find (pet → Miso's food
# allergy, vacation → the Lisbon trip, colleagues' mornings → asynchronous stand-ups), so
# only the embeddings can match them; the last shares just "tests". A hybrid score is 0.7 × vector + 0.3 × keyword, and the default min_score
# (0.35) is calibrated for hits that match both ways; pure paraphrases score lower, so
# the demo lowers the threshold per query.
step search "which foods must my pet avoid" --max-results 2 --min-score 0.2
step search "upcoming vacation abroad" --max-results 2 --min-score 0.2
step search "how do colleagues share progress each morning" --max-results 2 --min-score 0.2
step search "why did the tests fail intermittently" --max-results 2 --min-score 0.2
step get memory/projects/heron.md --from 1 --lines 8
# What a new user types next (README "Quick start").
cat <<'NEXT'

Next, in this shell:
  source .venv/bin/activate                       # puts memory-router on PATH
  export MEMORY_ROUTER_CONFIG=examples/demo.toml  # so --config can be left out
  memory-router search which foods must my pet avoid --min-score 0.2
  memory-router status
  memory-router doctor
  memory-router watch                             # re-index as the notes change (Ctrl-C stops)
NEXT
