#!/bin/sh
# The vmgenid driver's binding, for the fork harness's lifecycle test:
#   vmgenid unbind|bind   unbind or bind the device through sysfs
#   vmgenid               report only
# Prints "BOUND yes|no DEV <name>"; exits 1 if there is no vmgenid device.
drv=/sys/bus/platform/drivers/vmgenid
dev=
for d in /sys/bus/platform/devices/*; do
	case "$(cat "$d/modalias" 2>/dev/null)" in
	*VM_GEN_COUNTER*|*VMGENCTR*) dev=${d##*/} ;;
	esac
done
[ -n "$dev" ] || { echo "BOUND no DEV none"; exit 1; }
case "${1:-}" in
unbind) echo "$dev" >"$drv/unbind" ;;
bind) echo "$dev" >"$drv/bind" ;;
esac
[ -e "$drv/$dev" ] && b=yes || b=no
echo "BOUND $b DEV $dev"
