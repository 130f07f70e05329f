#!/bin/sh
# Boot smoke test: the vmgenid driver bound to QEMU's device (its probe
# mixes the initial ID into the RNG before it can bind) and the RNG is up.
r() { echo "RESULT $*"; }
dev=$(ls /sys/bus/platform/drivers/vmgenid 2>/dev/null | grep -i 'vgid\|vm_gen\|vmgenctr' | head -1)
if [ -n "$dev" ]; then
	r PASS vmgenid-bound "($dev)"
else
	r FAIL vmgenid-bound: "no device under /sys/bus/platform/drivers/vmgenid"
fi
if [ -r /proc/sys/kernel/random/boot_id ] && head -c 16 /dev/urandom | od -An -tx1 | grep -q .; then
	r PASS rng-readable
else
	r FAIL rng-readable: "cannot read /dev/urandom"
fi
if dmesg | grep -q 'crng init done'; then
	r PASS crng-init-done
else
	r FAIL crng-init-done: "no 'crng init done' in dmesg"
fi
