#!/bin/sh
# Benchmark mode (vmfork.run=probe): consumers busy across the snapshot;
# like serve.sh it never returns, the host quits QEMU.
busyprobe /dev/ttyS1 &
while :; do sleep 3600; done
