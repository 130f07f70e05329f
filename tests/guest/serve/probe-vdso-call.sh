#!/bin/sh
# Benchmark mode (vmfork.serve=probe-vdso-call): as probe-vdso.sh, but the
# vDSO loop makes 64 KiB calls, so that a snapshot lands inside one (the
# vdso-call phase: the end-of-call check).
busy-probe /dev/ttyS1 vdso-call &
while :; do sleep 3600; done
