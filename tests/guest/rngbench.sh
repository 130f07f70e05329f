#!/bin/sh
# make bench-rng, guest side: a short warm-up, then three timed runs each
# of getrandom(2) (tests/guest/rngbench.c) and, when this kernel's probe
# module is in the initramfs, of get_random_u32()/u64() in the kernel.
# A benchmark, not a test: its one result says that the timings ran.
# shellcheck source=tests/guest/ktap.sh
. /tests/ktap.sh
rngbench 0.2 >/dev/null
runs=0
for _ in 1 2 3; do
	rngbench 1 && runs=$((runs + 1))
done
if [ -f /lib/vmfork/rngprobe.ko ]; then
	insmod /lib/vmfork/rngprobe.ko bench_ms=1000 bench_rounds=3
	# The module logs with printk: let the console catch up.
	sleep 0.5
fi
if [ $runs = 3 ]; then ok rngbench "3 timed runs"; else fail rngbench "$runs of 3 timed runs"; fi
