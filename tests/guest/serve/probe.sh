#!/bin/sh
# Benchmark mode (vmfork.serve=probe): consumers busy across the snapshot,
# in the kernel too when this kernel's probe module is in the initramfs;
# like records.sh it never returns, the host quits QEMU.
[ -f /lib/vmfork/rngprobe.ko ] && insmod /lib/vmfork/rngprobe.ko
busy-probe /dev/ttyS1 &
while :; do sleep 3600; done
