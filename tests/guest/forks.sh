#!/bin/sh
# How many VM forks this guest's RNG has handled: the kernel logs one line
# per reseed on a vmgenid change, and dmesg survives restores (it is RAM).
# shellcheck source=tests/guest/messages.sh
. /tests/messages.sh
echo "FORKS $(dmesg | grep -c "$RESEED")"
echo "UPTIME $(cut -d' ' -f1 /proc/uptime)"
