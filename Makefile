# vmfork: the patch series, its kernel tree, its gates and its QEMU tests.
# Every target is one script; 'make help' lists the README's (initramfs
# and report are steps of others). Each builds what it needs first.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
export T0 := $(shell date +%s)

all: deps tree build boot fork-demo report  ## main job: build, boot, fork, report

help:  ## list the targets, then make check's gates
	@grep -E '^[a-z-]+:.*## ' Makefile | sed 's/:.*## /\t/'
	@printf '\ngates of make check (a directory each in checks/):\n'; checks/run --list | sed 's/^/  /'

deps:  ## install missing Debian packages (apt)
	@scripts/deps
base: deps  ## build/base: Debian's linux-source at patches/base-version (private apt)
	@scripts/getbase
rebase: deps  ## record the newest linux-source Debian ships as the base (then port: README)
	@scripts/getbase --newest
tree: base  ## build/linux: Debian base + one b4 branch per series of patches/series, stacked
	@scripts/mktree
export:  ## write the series branches back to patches/NAME/
	@scripts/export
build: tree  ## configure (tinyconfig + configs/) and build the patched kernel
	@scripts/build
build-stock: tree  ## build the unpatched base kernel (for comparisons)
	@scripts/build stock
initramfs: tree  # busybox, guest programs, the tree's kselftests
	@scripts/mkinitramfs
boot: build initramfs  ## boot the patched kernel in QEMU, run the smoke test
	@harness/vmtest guest boot
fork-demo: build initramfs  ## fork a running guest: two clones and a control
	@mkdir -p build/logs && harness/vmtest fork-demo | tee build/logs/fork-demo.txt
report:  # short summary of the last main job
	@scripts/report
check: tree  ## static-analysis gates on the stack (SERIES=NAME for one series, SERIES=dir|mbox for another), then the whole-kernel gates' fixtures
	@checks/run $(SERIES) && tests/host/gate-fixtures --kernels
test:  ## every gate and test (its first phase installs packages); ends with 'N passed, N failed'
	@command -v python3 >/dev/null || scripts/deps; harness/vmtest test
test-debug: tree  ## fork tests on a lockdep/KASAN/UBSAN kernel (slow)
	@tests/run-debug
test-revert: tree initramfs  ## the series with its checks compiled out must repeat where stock does (window, long-read); also in test and test-debug
	@harness/vmtest test --revert
test-stable: tree initramfs  ## the fixes series backported to the previous Debian base (patches/stable-6.12): its bugs there, stock vs fixed
	@harness/vmtest test --stable
bench-fork: build build-stock initramfs  ## duplicated outputs across clones (user and in-kernel consumers): stock vs patched; ARGS="--pairs 5 ..." (harness/vmtest bench-fork --help)
	@harness/vmtest bench-fork $(ARGS)
bench-rng: build build-stock initramfs  ## getrandom(2) and get_random_u32/u64() throughput: patched/stock ratios
	@scripts/build-bench && harness/vmtest bench-rng
send: tree  ## gates, smoke test, then write each series with b4 (never sent); AUTHOR="Name <email>" to sign it, SERIES=NAME for one
	@scripts/send
reroll:  ## after sending: tag each series written as sent (vN) and start vN+1 (SERIES=NAME: only it)
	@scripts/reroll $(SERIES)

.PHONY: all help deps base rebase tree export build build-stock initramfs boot fork-demo \
	report check test test-debug test-revert test-stable bench-fork bench-rng send reroll
