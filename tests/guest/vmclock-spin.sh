#!/bin/sh
# vmclock-spin (tests/guest/vmclock-spin.c) in the background for the fork
# harness (harness/suites/vmclock_unpriv.py): it must spin across the
# snapshot while the record server goes on answering requests.
#   vmclock-spin start     - start it; wait (10 s at most) for its first
#                            line, print it and "SPIN-MODE <octal>" of the device
#   vmclock-spin result S  - wait up to S s for it to end: its lines, then
#                            "SPIN-EXIT <rc>", or "SPIN-RUNNING" if it has not
#   vmclock-spin state     - "SPIN-STATE alive=0|1 state=.. uid=.. utime=.. vcsw=.."
#                            (utime grows while it spins; vcsw, its voluntary
#                            context switches, stays put without a blocking syscall)
O=/tmp/spin.out
wait_for() { # FILE TENTHS: until FILE exists and is not empty
	i=0
	while [ ! -s "$1" ] && [ $i -lt "$2" ]; do
		sleep 0.1; i=$((i + 1))
	done
}
case "$1" in
start)
	rm -f $O /tmp/spin.rc /tmp/spin.pid
	( vmclock-spin >$O 2>&1 &
	  echo $! >/tmp/spin.pid
	  wait $!
	  echo $? >/tmp/spin.rc ) </dev/null >/dev/null 2>&1 &
	wait_for $O 100
	cat $O
	[ -s /tmp/spin.rc ] && echo "SPIN-EXIT $(cat /tmp/spin.rc)"
	echo "SPIN-MODE $(stat -c %a /dev/vmclock0 2>&1)"
	;;
result)
	wait_for /tmp/spin.rc $(($2 * 10))
	cat $O
	if [ -s /tmp/spin.rc ]; then echo "SPIN-EXIT $(cat /tmp/spin.rc)"; else echo SPIN-RUNNING; fi
	;;
state)
	p=$(cat /tmp/spin.pid 2>/dev/null)
	if [ -n "$p" ] && [ -r "/proc/$p/stat" ]; then
		# comm is "(vmclock-spin)", one field: state is field 3, utime 14.
		echo "SPIN-STATE alive=1 $(awk '{print "state=" $3, "utime=" $14}' "/proc/$p/stat")" \
			"$(awk '/^Uid:/ {print "uid=" $2} /^voluntary_ctxt/ {print "vcsw=" $2}' "/proc/$p/status" |
				tr '\n' ' ')"
	else
		echo "SPIN-STATE alive=0"
	fi
	;;
esac
