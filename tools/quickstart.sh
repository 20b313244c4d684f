#!/bin/sh
# tools/quickstart.sh - the README's two commands.
#
#   tools/quickstart.sh         install missing build dependencies (apt), bootstrap, configure,
#                               build into ./build, run suites/smoke.yaml on the CPU engine and
#                               print its report
#   tools/quickstart.sh check   install the test dependencies, then `make check` in ./build
#
# Environment: CONFIGURE_FLAGS (extra ./configure flags, e.g. --enable-werror),
# BUILD_DIR (default: build), KESTREL_DB (default: results/kestrel.db).
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
build=${BUILD_DIR:-build}
mode=${1:-smoke}

build_deps="build-essential autoconf automake libtool pkg-config libsqlite3-dev libyaml-dev libzstd-dev libssl-dev zstd"
test_deps="python3 python3-numpy python3-yaml python3-jsonschema sqlite3 chromium valgrind procps xz-utils"

apt_install() { # install the packages of $* that are missing
    missing=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "quickstart: installing$missing"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

configure_and_build() {
    if [ ! -x configure ] || [ configure.ac -nt configure ]; then autoreconf -fi; fi
    mkdir -p "$build"
    if [ ! -f "$build/config.status" ]; then
        (cd "$build" && "$top/configure" ${CONFIGURE_FLAGS:-})
    fi
    make -C "$build" -j"$(nproc)"
}

case $mode in
smoke)
    apt_install $build_deps
    configure_and_build
    mkdir -p results
    status=0
    "$build/kestrel-eval" run suites/smoke.yaml --label quickstart || status=$?
    "$build/kestrel-eval" report latest || true
    exit $status
    ;;
check)
    apt_install $build_deps $test_deps
    configure_and_build
    make -C "$build" check
    ;;
*)
    echo "usage: tools/quickstart.sh [check]" >&2
    exit 2
    ;;
esac
