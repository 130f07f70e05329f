#!/bin/sh
# Runs kselftest programs (default: the series' fork_events test) and turns
# each exit status into one result line: kselftest exits 4 to skip, which
# is what the stock kernel (no fork_events file) must produce.
# shellcheck source=tests/guest/ktap.sh
. /tests/ktap.sh
[ $# -gt 0 ] || set -- fork_events
for t in "$@"; do
	out=$("/bin/$t" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	case $rc in
	0) ok "kselftest-$t" ;;
	4) skip "kselftest-$t" "$(echo "$out" | grep -m1 -i skip)" ;;
	*) fail "kselftest-$t" "exit $rc" ;;
	esac
done
