#!/bin/sh
# Boot smoke test: the vmgenid driver bound to QEMU's device (its probe
# mixes the initial ID into the RNG before it can bind) and the RNG is up.
# shellcheck source=tests/guest/ktap.sh
. /tests/ktap.sh
# shellcheck disable=SC2010 # device names: busybox ls, no odd characters
dev=$(ls /sys/bus/platform/drivers/vmgenid 2>/dev/null | grep -i 'vgid\|vm_gen\|vmgenctr' | head -1)
if [ -n "$dev" ]; then
	ok vmgenid-bound "($dev)"
else
	fail vmgenid-bound "no device under /sys/bus/platform/drivers/vmgenid"
fi
if [ -r /proc/sys/kernel/random/boot_id ] && head -c 16 /dev/urandom | od -An -tx1 | grep -q .; then
	ok rng-readable
else
	fail rng-readable "cannot read /dev/urandom"
fi
# shellcheck source=tests/guest/messages.sh
. /tests/messages.sh
if dmesg | grep -q "$CRNG_READY"; then
	ok crng-init-done
else
	fail crng-init-done "no '$CRNG_READY' in dmesg"
fi
# get_random_bytes() longer than a page, which no other test makes
# (tests/kmod/rngprobe.c, bigread): exactly its buffer written, no two
# 32-byte chunks alike. It stays loaded, idle: the shipped config cannot
# unload modules.
ko=/lib/vmfork/rngprobe.ko
if [ ! -f "$ko" ]; then
	fail get-random-bytes-paged "no $ko in the initramfs"
elif insmod "$ko" bigread=1 && dmesg | grep -q 'rngprobe: bigread [0-9]* bytes: ok$'; then
	ok get-random-bytes-paged "($(dmesg | grep -o 'bigread [0-9]* bytes' | tail -1))"
else
	fail get-random-bytes-paged "$(dmesg | grep 'rngprobe: bigread' | tail -1)"
fi
