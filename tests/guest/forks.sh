#!/bin/sh
# How many VM forks this guest's RNG has handled: the kernel logs one line
# per reseed on a vmgenid change, and dmesg survives restores (it is RAM).
# shellcheck source=tests/guest/messages.sh
. /tests/messages.sh
echo "FORKS $(dmesg | grep -c "$RESEED")"
echo "UPTIME $(cut -d' ' -f1 /proc/uptime)"
# ACPI interrupts so far: a fork's notification is one (make test-stable
# reads it where the kernel logs nothing on a fork).
echo "SCI $(cat /sys/firmware/acpi/interrupts/sci 2>/dev/null || echo -1)"
