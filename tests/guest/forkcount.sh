#!/bin/sh
# fork_events for the fork-count-cases phase (harness/suites/fork_count.py).
#   forkcount ready - wait (30 s at most) for "crng init done": before it a
#                     fork is logged as an early rekey, not a reseed; "COUNT n"
#   forkcount read  - "COUNT n", the read first (on the patched kernel it runs
#                     the RNG's check itself; this script's exec draws too)
#   forkcount draw  - 16 bytes of /dev/urandom first, then "COUNT n"
# "COUNT missing" where the kernel has no fork_events (stock).
# shellcheck source=tests/guest/messages.sh
. /tests/messages.sh
F=/proc/sys/kernel/random/fork_events
count() { echo "COUNT $(cat $F 2>/dev/null || echo missing)"; }
case "$1" in
ready)
	i=0
	while ! dmesg | grep -q "$CRNG_READY" && [ $i -lt 300 ]; do
		sleep 0.1; i=$((i + 1))
	done
	dmesg | grep -q "$CRNG_READY" || echo "CRNG not ready after 30 s"
	count
	;;
read) count ;;
draw)
	head -c 16 /dev/urandom >/dev/null
	count
	;;
esac
