#!/bin/sh
# fork_events pollers for the fork harness.
#   fepoll start N MS  - N pollers (every other one unprivileged) block in
#                        poll() on fork_events for up to MS ms, in the background
#                        (fork_events_wait, tests/guest/fork_events_wait.c)
#   fepoll count       - print "COUNT n" only
#   fepoll result S    - wait up to S s for them; print "FE before=.. after=..
#                        woke=.." or "FE pending" if none returned, "FE-DRAW
#                        hex" (16 bytes the first poller drew as it woke),
#                        and "COUNT n" (the file's value now)
# When they return, a kmsg line is logged so that the host can measure the
# delay from the kernel's reseed line to the wake-up on the same clock.
# shellcheck source=tests/guest/messages.sh
. /tests/messages.sh
F=/proc/sys/kernel/random/fork_events
case "$1" in
count)
	echo "COUNT $(cat $F 2>/dev/null || echo missing)"
	;;
start)
	# Before "crng init done" a fork is not logged as a reseed (nothing to
	# reseed yet): wait for it so that every fork here is a real reseed.
	i=0
	while ! dmesg | grep -q "$CRNG_READY" && [ $i -lt 300 ]; do
		sleep 0.1; i=$((i + 1))
	done
	rm -f /tmp/fe.out /tmp/fe.done
	( fork_events_wait "$3" "$2" >/tmp/fe.out 2>&1
	  echo "fepoll: pollers returned" >/dev/kmsg
	  touch /tmp/fe.done ) </dev/null >/dev/null 2>&1 &
	i=0
	while ! grep -q '^# ready' /tmp/fe.out 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1; i=$((i + 1))
	done
	sleep 0.5	# the pollers are forked after the ready line: let them block
	grep '^# ready' /tmp/fe.out || echo "FE not ready: $(cat /tmp/fe.out)"
	;;
result)
	i=0
	while [ ! -e /tmp/fe.done ] && [ $i -lt $(($2 * 10)) ]; do
		sleep 0.1; i=$((i + 1))
	done
	if [ -e /tmp/fe.done ]; then
		grep '^fork_events ' /tmp/fe.out | sed 's/^fork_events/FE/' || echo "FE none: $(cat /tmp/fe.out)"
		grep '^fork_events_draw ' /tmp/fe.out | sed 's/^fork_events_draw/FE-DRAW/'
	else
		echo "FE pending"
	fi
	echo "COUNT $(cat $F 2>/dev/null || echo missing)"
	dmesg | grep -E "$RESEED|fepoll: pollers returned" |
		tail -2 | sed 's/^/KMSG /'
	;;
esac
