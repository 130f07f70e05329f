#!/bin/sh
# The vmgenid driver's binding, for the fork harness's lifecycle tests:
#   vmgenid unbind|bind       unbind or bind the device through sysfs
#   vmgenid rmmod|insmod      remove or load vmgenid.ko (a module build)
#   vmgenid sweep-bind|sweep-insmod
#                             bind or load with each allocation failed in
#                             turn (tests/guest/failsweep.c), ending bound
#   vmgenid                   report only
# Prints "BOUND yes|no DEV <name> MOD yes|no|builtin", after a sweep its
# "SWEEP ..." line first; exits 1 if there is no vmgenid device.
drv=/sys/bus/platform/drivers/vmgenid
ko=/lib/vmfork/vmgenid.ko
dev=
for d in /sys/bus/platform/devices/*; do
	case "$(cat "$d/modalias" 2>/dev/null)" in
	*VM_GEN_COUNTER*|*VMGENCTR*) dev=${d##*/} ;;
	esac
done
[ -n "$dev" ] || { echo "BOUND no DEV none"; exit 1; }
# Fault injection for the sweeps: GFP_KERNEL allocations too, quietly
# (a stack dump per injected failure would bury the console).
failslab() {
	fi=/sys/kernel/debug/failslab
	[ -d "$fi" ] || mount -t debugfs debugfs /sys/kernel/debug
	[ -d "$fi" ] || { echo "SWEEP none: no failslab (CONFIG_FAILSLAB)"; return 1; }
	echo N >"$fi/ignore-gfp-wait" && echo 0 >"$fi/verbose"
}
case "${1:-}" in
unbind) echo "$dev" >"$drv/unbind" ;;
bind) echo "$dev" >"$drv/bind" ;;
rmmod) rmmod vmgenid ;;
insmod) insmod "$ko" ;;
sweep-bind)
	[ ! -e "$drv/$dev" ] || echo "$dev" >"$drv/unbind"
	failslab && failsweep bind "$drv" "$dev" ;;
sweep-insmod)
	! grep -q '^vmgenid ' /proc/modules || rmmod vmgenid
	failslab && failsweep insmod "$ko" ;;
esac
[ -e "$drv/$dev" ] && b=yes || b=no
if grep -q '^vmgenid ' /proc/modules; then
	m=yes
elif [ -f "$ko" ]; then
	m=no
else
	m=builtin
fi
echo "BOUND $b DEV $dev MOD $m"
