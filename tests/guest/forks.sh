#!/bin/sh
# How many VM forks this guest's RNG has handled: the kernel logs one line
# per reseed on a vmgenid change, and dmesg survives restores (it is RAM).
echo "FORKS $(dmesg | grep -c 'crng reseeded due to virtual machine fork')"
echo "UPTIME $(cut -d' ' -f1 /proc/uptime)"
