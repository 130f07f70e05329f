#!/bin/sh
# Benchmark mode (vmfork.serve=probe-vdso): one vDSO getrandom() loop is the
# only consumer of randomness, in user or kernel space; like probe.sh it
# never returns, the host quits QEMU.
busy-probe /dev/ttyS1 vdso &
while :; do sleep 3600; done
