#!/bin/sh
# vmclock-hold (tests/guest/vmclock-hold.c) on the vmclock device: an open
# /dev/vmclock0 across an unbind, then bound again. Its HOLD lines, then
# "HOLD-EXIT <rc>" (a program the kernel killed midway exits 137).
drv=/sys/bus/platform/drivers/vmclock
dev=
# The driver's directory links each device bound to it (and its module).
for d in "$drv"/*; do
	[ -L "$d" ] && [ "${d##*/}" != module ] && dev=${d##*/}
done
[ -n "$dev" ] || { echo "HOLD-EXIT none: no device bound to $drv"; exit 1; }
vmclock-hold "$drv" "$dev"
echo "HOLD-EXIT $?"
