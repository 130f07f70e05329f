#!/bin/sh
# Two WireGuard peers in two network namespaces, for the fork harness.
#   setup: create both, exchange keys, establish a session (one ping)
#   hs:    print "HS <latest-handshake seconds>" as seen by peer a
#   ping:  send one packet a -> b through the tunnel, print "PING ok|fail"
# The UDP sockets stay in the init namespace (WireGuard binds where the
# interface was created), so loopback carries the tunnel: no veth needed.
set -u
st=/tmp/wgpair
ns() { pid=$(cat "$st.$1"); shift; nsenter -t "$pid" -n "$@"; }
newns() {
	# Its own stdio: an inherited pipe would keep the caller waiting for EOF.
	unshare -n sleep 2147483647 </dev/null >/dev/null 2>&1 &
	echo $! >"$st.$1"
	# unshare runs after the fork: wait until the child really has its own netns.
	for _ in $(seq 50); do
		[ "$(readlink /proc/$!/ns/net)" != "$(readlink /proc/self/ns/net)" ] && return 0
		usleep 20000
	done
	echo "ERR namespace $1 never appeared"; exit 1
}
case "${1:-}" in
setup)
	ip link set lo up
	newns a; newns b
	wg genkey >$st.ka; wg pubkey <$st.ka >$st.pa
	wg genkey >$st.kb; wg pubkey <$st.kb >$st.pb
	ip link add wga type wireguard || exit 1
	ip link add wgb type wireguard || exit 1
	wg set wga listen-port 51820 private-key $st.ka \
		peer "$(cat $st.pb)" allowed-ips 10.99.0.2/32 endpoint 127.0.0.1:51821 || exit 1
	wg set wgb listen-port 51821 private-key $st.kb \
		peer "$(cat $st.pa)" allowed-ips 10.99.0.1/32 endpoint 127.0.0.1:51820 || exit 1
	ip link set wga netns "$(cat $st.a)" || exit 1
	ip link set wgb netns "$(cat $st.b)" || exit 1
	ns a ip addr add 10.99.0.1/24 dev wga; ns a ip link set wga up
	ns b ip addr add 10.99.0.2/24 dev wgb; ns b ip link set wgb up
	# shellcheck disable=SC2015 # setup failing at any step is the failure
	ns a ping -c1 -W5 10.99.0.2 >/dev/null && echo "SETUP ok" || { echo "SETUP fail"; exit 1; }
	;;
hs)
	echo "HS $(ns a wg show wga latest-handshakes | cut -f2)"
	;;
ping)
	ns a ping -c1 -W5 10.99.0.2 >/dev/null && echo "PING ok" || echo "PING fail"
	;;
*)
	echo "usage: wgpair.sh setup|hs|ping"; exit 2 ;;
esac
