#!/bin/sh
# The vmgenid driver's binding, for the fork harness's lifecycle tests:
#   vmgenid unbind|bind       unbind or bind the device through sysfs
#   vmgenid rmmod|insmod      remove or load vmgenid.ko (a module build)
#   vmgenid sweep-bind        bind with each of the driver's allocations
#                             failed in turn (tests/guest/failsweep.c),
#                             ending bound; vmgenid.ko must be loaded
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
# Fault injection for the sweep: GFP_KERNEL allocations too, quietly (a
# stack dump per injected failure would bury the console), and only those
# made from module code (vmgenid.ko, above the kernel image) within 10
# frames: the driver's own, the devres and ACPI calls it makes, but not
# the AML interpreter's deep inside evaluating ADDR, which oopses on its
# own when a package copy fails (acpi_ut_copy_ipackage_to_ipackage leaves
# a count with no elements; outside this series, seen in 6.12).
failslab() {
	fi=/sys/kernel/debug/failslab
	[ -d "$fi" ] || mount -t debugfs debugfs /sys/kernel/debug
	[ -f "$fi/require-start" ] ||
		{ echo "SWEEP none: no failslab stacktrace filter (CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_STACKTRACE_FILTER)"; return 1; }
	grep -q '^vmgenid ' /proc/modules || { echo "SWEEP none: vmgenid.ko is not loaded"; return 1; }
	echo N >"$fi/ignore-gfp-wait" && echo 0 >"$fi/verbose" &&
		echo 10 >"$fi/stacktrace-depth" &&
		echo "0x$(awk '$3 == "_end" { print $1 }' /proc/kallsyms)" >"$fi/require-start" &&
		echo 0xffffffffff000000 >"$fi/require-end"
}
case "${1:-}" in
unbind) echo "$dev" >"$drv/unbind" ;;
bind) echo "$dev" >"$drv/bind" ;;
rmmod) rmmod vmgenid ;;
insmod) insmod "$ko" ;;
sweep-bind)
	[ ! -e "$drv/$dev" ] || echo "$dev" >"$drv/unbind"
	failslab && failsweep "$drv" "$dev" ;;
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
