"""vmfork's test harness: boots, forks and benchmarks in QEMU (tests/vmtest)."""
