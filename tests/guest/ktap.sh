# shellcheck shell=sh
# Sourced by the guest test scripts: one KTAP result line per check
# (Documentation/dev-tools/ktap.rst), indented as a subtest of the
# document init prints. ok NAME [DETAIL]; fail NAME WHY; skip NAME WHY.
# /tmp/ktap.n and /tmp/ktap.failed tell init how the script went.
n=0
ok() { n=$((n + 1)); echo "  ok $n $1${2:+ # $2}"; echo $n >/tmp/ktap.n; }
fail() { n=$((n + 1)); echo "  not ok $n $1 # $2"; echo $n >/tmp/ktap.n; : >/tmp/ktap.failed; }
skip() { n=$((n + 1)); echo "  ok $n $1 # SKIP $2"; echo $n >/tmp/ktap.n; }
