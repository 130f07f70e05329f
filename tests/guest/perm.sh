#!/bin/sh
# Permissions: neither root nor an unprivileged user can write fork_events
# (the only file the series adds), and trying does not count as a fork.
F=/proc/sys/kernel/random/fork_events
# shellcheck source=tests/guest/ktap.sh
. /tests/ktap.sh
if [ ! -e $F ]; then
	skip fork-events-perm "$F not present"
	exit 0
fi
before=$(cat $F)
echo 7 >$F 2>/dev/null && root=written || root=refused
user=$(su nobody -s /bin/sh -c "echo 7 >$F 2>/dev/null && echo written || echo refused")
after=$(cat $F)
if [ "$root" = refused ] && [ "$user" = refused ] && [ "$before" = "$after" ]; then
	ok fork-events-perm "(root and uid 65534 refused; count stays $after)"
else
	fail fork-events-perm "root $root, nobody $user, count $before -> $after"
fi
