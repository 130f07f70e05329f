#!/bin/sh
# Runs the series' kselftest for /proc/sys/kernel/random/fork_events and
# turns its exit status into one result line: kselftest exits 4 to skip,
# which is what the stock kernel (no fork_events file) must produce.
out=$(/bin/fork_events 2>&1)
rc=$?
echo "$out" | sed 's/^/# /'
case $rc in
0) echo "RESULT PASS kselftest-fork_events" ;;
4) echo "RESULT SKIP kselftest-fork_events: $(echo "$out" | grep -m1 -i skip)" ;;
*) echo "RESULT FAIL kselftest-fork_events: exit $rc" ;;
esac
