#!/bin/sh
# Concurrency test, guest side, after "wgpair setup".
#   busy start  - rng-load (getrandom, /dev/urandom, vDSO on every CPU) and
#                 pings through the WireGuard tunnel as fast as replies come
#   busy status - "RX <packets received by peer a's wga> LOAD <live loaders>"
set -u
case "${1:-}" in
start)
	rng-load >/tmp/rng-load.log 2>&1 </dev/null &
	echo $! >/tmp/busy.pids
	nsenter -t "$(cat /tmp/wgpair.a)" -n ping -A -q -s 1000 10.99.0.2 >/dev/null 2>&1 </dev/null &
	echo $! >>/tmp/busy.pids
	sleep 1
	grep -q RNG-LOAD /tmp/rng-load.log && echo "STARTED $(cat /tmp/rng-load.log)" || echo "ERR $(cat /tmp/rng-load.log)"
	;;
status)
	rx=$(nsenter -t "$(cat /tmp/wgpair.a)" -n cat /proc/net/dev | awk '/wga:/ { print $3 }')
	live=0
	# shellcheck disable=SC2013 # one pid a line: words are lines
	for p in $(cat /tmp/busy.pids); do kill -0 "$p" 2>/dev/null && live=$((live + 1)); done
	echo "RX ${rx:-none} LOAD $live"
	;;
*)
	echo "usage: busy.sh start|status"; exit 2 ;;
esac
