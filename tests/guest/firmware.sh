#!/bin/sh
# Malformed firmware (harness/vmtest firmware): what the vmgenid driver made of
# the device, and whether the RNG works whatever it decided.
# shellcheck source=tests/guest/ktap.sh
. /tests/ktap.sh
# shellcheck disable=SC2010 # device names: busybox ls, no odd characters
bound=$(ls /sys/bus/platform/drivers/vmgenid 2>/dev/null | grep ':' | head -1)
echo "VMGENID-BOUND ${bound:-none}"
# Not the command line, which may name vmgenid.
dmesg | grep -i 'vmgenid\|VMFK0001' | grep -vi 'command line:' | sed 's/^/VMGENID-LOG /'
a=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
b=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
if [ ${#a} = 32 ] && [ "$a" != "$b" ] && rngbench 0.05 | grep -q 'calls_per_s=[1-9]'; then
	ok rng "/dev/urandom and getrandom(2) work"
else
	fail rng "urandom '$a' '$b', or getrandom(2) failed"
fi
