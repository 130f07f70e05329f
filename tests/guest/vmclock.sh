#!/bin/sh
# vmclock (drivers/ptp/ptp_vmclock.c) beside vmgenid: QEMU's -device
# vmclock probes, its page reads back with the ABI's magic, and the
# vmgenid driver and fork_events are still there. Without the device
# the check SKIPs (tests/harness/profiles.py: vmclock-absent expects it).
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
if /tests/vmgenid.sh >/tmp/vmgenid.out && grep -q '^BOUND yes' /tmp/vmgenid.out &&
	[ -r /proc/sys/kernel/random/fork_events ]; then
	ok vmclock-beside-vmgenid "($(cat /tmp/vmgenid.out), fork_events $(cat /proc/sys/kernel/random/fork_events))"
else
	fail vmclock-beside-vmgenid "vmgenid: $(cat /tmp/vmgenid.out); fork_events: $(ls /proc/sys/kernel/random/fork_events 2>&1)"
fi
