#!/bin/sh
# Fork storm, guest side.
#   storm start  - every CPU busy on the RNG (rng-load: getrandom, urandom, vDSO),
#                  and a poller that re-arms after each wake-up; its lines
#                  ("# ready: ... count N", "fork_events before=.. after=..")
#                  go to /tmp/storm.log
#   storm pause  - stop the load (SIGSTOP), so that a same-GUID control
#                  pair restored from the next snapshot must repeat
#   storm resume - let it go on
#   storm report - the log and the count now
F=/proc/sys/kernel/random/fork_events
case "$1" in
start)
	rng-load >/dev/null 2>&1 </dev/null &
	echo $! >/tmp/storm.load
	( while :; do
		fork_events_wait 600000 1
	  done ) >>/tmp/storm.log 2>&1 </dev/null &
	sleep 1
	echo "STARTED"
	;;
pause | resume)
	sig=STOP; [ "$1" = resume ] && sig=CONT
	kill -$sig "$(cat /tmp/storm.load)" && echo "LOAD $1d"
	;;
report)
	# The poller re-arms after each wake-up, which is slow with every CPU
	# busy: give it up to 10 s to read the final count.
	c=$(cat $F 2>/dev/null) || c=missing
	i=0
	while [ "$c" != missing ] && [ $i -lt 100 ]; do
		last=$(grep -oE 'count [0-9]+|after=[0-9]+' /tmp/storm.log | tail -1 | grep -oE '[0-9]+')
		[ "$last" = "$c" ] && break
		sleep 0.1; i=$((i + 1))
	done
	cat /tmp/storm.log
	echo "COUNT $(cat $F 2>/dev/null || echo missing)"
	;;
esac
