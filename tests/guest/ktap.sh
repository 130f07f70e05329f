# shellcheck shell=sh
# Sourced by the guest test scripts: one KTAP result line per check
# (Documentation/dev-tools/ktap.rst), indented as a subtest of the
# document init prints. ok NAME [DETAIL]; fail NAME WHY; skip NAME WHY.
n=0
ok() { n=$((n + 1)); echo "  ok $n $1${2:+ # $2}"; }
fail() { n=$((n + 1)); echo "  not ok $n $1 # $2"; : >/tmp/ktap.failed; }
skip() { n=$((n + 1)); echo "  ok $n $1 # SKIP $2"; }
