"""make bench-rng: RNG throughput, stock vs patched, in one run.

Boots each kernel --rounds times, alternating, so that drift of the machine
hits all alike. Each boot times getrandom(2) with 16-byte and 4 KiB reads,
the same through the vDSO's getrandom() and, through tests/kmod/rngprobe.ko,
get_random_u32() and get_random_u64() in the kernel, three times each. The
patched kernel boots four ways: with no device (its check patched out by a
static key), with vmgenid (the ID's first 8 bytes compared on every use),
with vmclock, its counter written before the first instruction as a VMM
does (the counter compared, in the kernel and in vDSO getrandom()), and
with both (the counter compared); and vmfork-reseed alone the same four
ways (reseed-*: no vDSO check, its vDSO rows are stock's), whose cover
letter quotes only figures of itself. Prints medians and
patched/stock ratios with the range of the per-round ratios, which shows
the noise. A benchmark, not a test: it passes or fails nothing.

Under TCG the guests run with -icount shift=0: guest time advances one
nanosecond per instruction executed, so calls per guest second measure
instructions per call, exactly and whatever else the host is doing
(wall-clock TCG timings vary 5-25 % between boots, far above the 1 % to
be shown). It counts instructions, not cycles: a load that misses the
cache costs one like any other. --clock host times TCG by the host's clock
instead; under KVM the host's clock is always used.

scripts/build-bench (make bench-rng runs it first) builds the patched
kernel for this into build/obj-bench with the stock
kernel's fragments (no KUnit), so that the two differ by the series only.

Then the native table: instructions are not cycles, so both kernels are
also built for User-Mode Linux (configs/uml.config), whose kernel code
runs natively as a host process. There the probe module times
get_random_u32()/u64() and 16 B / 4 KiB reads of /dev/urandom in the
kernel, each as the rate of its fastest block of calls (a shared,
noisy host only ever slows a block down), with a fake ID watched
(patched) or none (patched-nowatch). The stock kernel runs twice a round:
"stock again" against stock is the method's own noise. UML has no vDSO
getrandom() and no jump labels: its static keys are a load and a test,
so patched-nowatch costs a little more there than on x86.
--uml-rounds 0 leaves the native table out, --rounds 0 the -icount one
(make bench-rng passes ROUNDS, UML_ROUNDS and CLOCK from its environment).
"""
import argparse
import functools
import math
import os
import re
import statistics
import sys
from typing import Dict, List, Sequence, Tuple

from machinery import console, kernels, qemu, vmclock_page

NAME, BENCHMARK, OWN_KERNELS = "bench-rng", True, True
ROUNDS, UML_ROUNDS, CLOCK = 3, 16, "icount"
BENCH_OBJ = kernels.KERNELS["bench"].obj(qemu.BUILD)
RESEED_OBJ = kernels.KERNELS["bench-reseed"].obj(qemu.BUILD)  # vmfork-reseed alone
# name, build, vmgenid GUID (None: no vmgenid), vmclock counter written at
# boot as the VMM (None: no vmclock). What the patched kernel watches:
# nothing (static key off), the ID's first 8 bytes, vmclock's counter,
# and with both the counter (the ID read only on a fork).
KERNELS = [("stock", qemu.STOCK_OBJ, "auto", None),
           ("nodev", BENCH_OBJ, None, None),
           ("vmgenid", BENCH_OBJ, "auto", None),
           ("vmclock", BENCH_OBJ, None, 1),
           ("both", BENCH_OBJ, "auto", 1),
           ("reseed-nodev", RESEED_OBJ, None, None),
           ("reseed-vmgenid", RESEED_OBJ, "auto", None),
           ("reseed-vmclock", RESEED_OBJ, None, 1),
           ("reseed-both", RESEED_OBJ, "auto", 1)]
PATCHED = [k[0] for k in KERNELS[1:]]
# name, UML build (build/uml-NAME, its source build/uml-NAME-src), source, fake ID watched
UML = [("stock", "stock", "stock", 0), ("stock again", "stock", "stock", 0),
       ("patched", "patched", "linux", 1), ("patched-nowatch", "patched", "linux", 0)]
LINE = re.compile(r"RNGBENCH (?:size=(\d+)|vdso=(\d+)|fn=(\w+)|read=(\d+)) "
                  r"calls_per_s=(\d+)(?: best_per_s=(\d+))?")
# {metric: [a value per timing, or per boot]}
Metrics = Dict[str, List[float]]


def metrics(text: str, best: bool = False) -> Metrics:
    out: Metrics = {}
    for size, vdso, fn, read, rate, fastest in LINE.findall(text):
        name = ("getrandom %s B" % size if size else
                "vDSO getrandom %s B" % vdso if vdso else
                "urandom read %s B" % read if read else fn + "()")
        out.setdefault(name, []).append(float(fastest if best else rate))
    return out


def median_ci(xs: Sequence[float]) -> Tuple[float, float]:
    """95% confidence interval of the median, from order statistics (no
    assumption on the distribution); with fewer than 9 values, their range."""
    xs, n, j = sorted(xs), len(xs), 0
    while sum(math.comb(n, i) for i in range(j + 1)) / 2 ** n <= 0.025:
        j += 1
    return (xs[0], xs[-1]) if j == 0 else (xs[j - 1], xs[n - j])


def table(title: str, rows: Dict[str, Metrics], cols: List[str]) -> None:
    """rows: metric -> {column: [median of each boot]}; ratios against cols[0]."""
    print(title)
    print("%-22s" % "" + "".join("%16s" % c for c in cols) +
          "".join("   %-24s" % ("%s/%s" % (c, cols[0])) for c in cols[1:]))
    for m, by in rows.items():
        line = "%-22s" % m + "".join("%16.0f" % statistics.median(by[c]) for c in cols)
        for c in cols[1:]:
            lo, hi = median_ci([a / b for a, b in zip(by[c], by[cols[0]])])
            line += "   %-24s" % ("%.3f [%.3f-%.3f]" % (
                statistics.median(by[c]) / statistics.median(by[cols[0]]), lo, hi))
        print(line)


def uml_boot(obj: str, watch: int, log: str, timeout: float = 180) -> str:
    """Boot a UML kernel on the last CPU; its console text, or exit."""
    ok, text = qemu.uml(obj, ["mem=64M", "rngprobe.bench_ms=300", "rngprobe.bench_rounds=3",
                              "rngprobe.fake_watch=%d" % watch], log, timeout)
    if not ok or "rngprobe:" in text or console.splats(text):
        sys.exit("bench-rng: UML %s failed or did not finish in %d s; log: %s\n%s" % (
            obj, timeout, log, qemu.tail(log)))
    return text


def built(path: str) -> None:
    """Kernels are built by scripts (make bench-rng: scripts/build-bench), never here."""
    if not os.path.exists(path):
        sys.exit("bench-rng: no %s: make bench-rng builds it (scripts/build-bench)" % path)


def native(rounds: int) -> None:
    """The native table: UML kernels alternated, rounds rounds."""
    for obj in sorted({u[1] for u in UML}):
        built(os.path.join(kernels.KERNELS["uml-" + obj].obj(qemu.BUILD), "linux"))
    print("[bench-rng] native: User-Mode Linux on CPU %d; %d rounds" %
          ((os.cpu_count() or 1) - 1, rounds), flush=True)
    res: Dict[str, Metrics] = {u[0]: {} for u in UML}
    log = os.path.join(qemu.BUILD, "logs", "bench-rng-uml.log")
    for r in range(rounds):
        # Rotated each round, so that no kernel always runs first.
        for name, obj, _, watch in UML[r % len(UML):] + UML[:r % len(UML)]:
            got = metrics(uml_boot(kernels.KERNELS["uml-" + obj].obj(qemu.BUILD), watch, log), best=True)
            if len(got) < 4:
                sys.exit("bench-rng: UML %s printed %s; log: %s" % (name, sorted(got), log))
            for m, v in got.items():
                res[name].setdefault(m, []).append(statistics.median(v))
        print("[bench-rng] native round %d/%d done" % (r + 1, rounds), flush=True)
    print("\nNative (UML), calls per second of the fastest block of calls, median of "
          "%d boots x 3 timings each" % rounds)
    print("ratio: of the medians [range of the per-round ratios; from 9 rounds on, the 95% "
          "confidence interval of their median]; stock again/stock is the method's noise\n")
    print("Nanoseconds per call, and what the series adds")
    for m in res["stock"]:
        ns = {c: 1e9 / statistics.median(res[c][m]) for c in res}
        print("%-22s stock %8.1f   stock again %+6.1f   patched %+6.1f   patched-nowatch %+6.1f" % (
            m, ns["stock"], ns["stock again"] - ns["stock"], ns["patched"] - ns["stock"],
            ns["patched-nowatch"] - ns["stock"]))
    print()
    cols = [u[0] for u in UML]
    table("Kernels side by side (patched: a fake ID watched; nowatch: none)",
          {m: {c: res[c][m] for c in cols} for m in res["stock"]}, cols)


def emulated(rounds: int, clock_opt: str) -> None:
    """The -icount table: QEMU guests alternated, rounds rounds."""
    for _, obj, _, _ in KERNELS:
        built(qemu.kernel_path(obj))
    accel = qemu.probe_accel(qemu.kernel_path(KERNELS[1][1]), qemu.initrd(KERNELS[1][1]))
    icount = accel == "tcg" and clock_opt == "icount"
    extra = ["-icount", "shift=0,sleep=off"] if icount else []
    clock = "TCG, -icount shift=0: 1 guest ns per instruction" if icount else accel + ", host clock"
    print("[bench-rng] %s; %d rounds" % (clock, rounds), flush=True)
    # res[kernel][metric] = [median of each boot]
    res: Dict[str, Metrics] = {k[0]: {} for k in KERNELS}
    log = os.path.join(qemu.BUILD, "logs", "bench-rng.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    for r in range(rounds):
        for name, obj, guid, counter in KERNELS:
            devices = "vmgenid" if counter is None else "both" if guid else "vmclock"
            setup = None if counter is None else functools.partial(write_counter, counter)
            ok, _, why = qemu.boot(qemu.kernel_path(obj), qemu.initrd(obj), "rngbench", accel, log,
                                   timeout=240, guid=guid, extra=extra, devices=devices,
                                   setup=setup)
            if not ok:
                sys.exit("bench-rng: %s boot failed: %s" % (name, why))
            with open(log, errors="replace") as f:
                got = metrics(f.read())
            if len(got) < 6:
                sys.exit("bench-rng: %s printed %s; is the probe module built? (make build)"
                         % (name, sorted(got) or "nothing"))
            for m, v in got.items():
                res[name].setdefault(m, []).append(statistics.median(v))
            print("[bench-rng] round %d/%d %s done" % (r + 1, rounds, name), flush=True)
    print("\nCalls per second, median of %d boots x 3 timings each (%s; 1 vCPU busy, "
          "the other idle)" % (rounds, clock))
    print("ratio: of the medians [range of the per-boot ratios; from 9 rounds on, the 95% "
          "confidence interval of their median]\n")
    if icount:
        print("Instructions per call (1e9 / calls per guest second), and what the series adds")
        for m in res["stock"]:
            per = {c: 1e9 / statistics.median(res[c][m]) for c in res}
            print("%-22s stock %8.1f" % (m, per["stock"]) + "".join(
                "   %s %+6.1f" % (c, per[c] - per["stock"]) for c in PATCHED))
        print()
    cols = [k[0] for k in KERNELS]
    table("Kernels side by side: stock with vmgenid; the patched kernel with no device, "
          "vmgenid, vmclock (its counter written), both; reseed-*: vmfork-reseed alone",
          {m: {c: res[c][m] for c in cols} for m in res["stock"]}, cols)


def write_counter(counter: int, pid: int, qmp: qemu.QMP) -> None:
    """As the VMM: VM_GEN_COUNTER_PRESENT and the counter, before the
    guest's first instruction, so that the driver finds them at probe."""
    vmclock_page.VmclockPage(pid, qmp).set_counter(counter)


def add_args(p: argparse.ArgumentParser) -> None:
    env = os.environ.get
    # String defaults: argparse converts them, and says so if they are not numbers.
    p.add_argument("--rounds", type=int, default=env("ROUNDS", str(ROUNDS)),
                   help="QEMU rounds; 0: no -icount table (env ROUNDS, default %(default)s)")
    p.add_argument("--uml-rounds", type=int, default=env("UML_ROUNDS", str(UML_ROUNDS)),
                   help="User-Mode Linux rounds; 0: no native table (env UML_ROUNDS, default %(default)s)")
    p.add_argument("--clock", choices=("icount", "host"), default=env("CLOCK", CLOCK),
                   help="how TCG guests are timed (env CLOCK, default %(default)s)")


def main(a: argparse.Namespace, s: qemu.Settings) -> None:
    if a.rounds:
        emulated(a.rounds, a.clock)
        print()
    if a.uml_rounds:
        native(a.uml_rounds)
