#!/bin/sh
# vmclock (drivers/ptp/ptp_vmclock.c): QEMU's -device vmclock probes and
# its page reads back with the ABI's magic. The vmclock profile runs it
# after smoke, and the fork_events kselftest, whose checks then hold beside
# vmclock. Without the device it SKIPs (the vmclock-absent profile).
# shellcheck source=tests/guest/ktap.sh
. /tests/ktap.sh
D=/dev/vmclock0
if [ ! -c $D ]; then
	skip vmclock-probed "no $D"
	exit 0
fi
# The first 4 bytes of struct vmclock_abi: VMCLOCK_MAGIC, "VCLK".
magic=$(dd if=$D bs=4 count=1 2>/dev/null | od -An -tx1 | tr -d ' \n')
if [ "$magic" = 56434c4b ]; then
	ok vmclock-probed "($D reads magic $magic)"
else
	fail vmclock-probed "$D reads '$magic', not VCLK (56434c4b)"
fi
