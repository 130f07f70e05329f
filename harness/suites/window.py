"""The race window, stock against patched: the test that fails without the series.

Busy consumers (getrandom, /dev/urandom, the vDSO, in-kernel get_random_u32()
and get_random_u64()) run across a stopped snapshot; pairs of clones are
restored from it and their outputs after the snapshot compared (harness/
busy.py). Requires, per interface:
  both, same GUID      a try where a control pair repeats (no fork, no
                       change: the comparison can see a repeat there)
  stock, new GUIDs     some pair repeats (the window this series closes):
                       on each interface, in any try
  patched, new GUIDs   no pair repeats anything, in any try; and at least
                       --pairs of them from tries whose control repeated
A stock try that leaves some verdict unmet is redone (up to STOCK_TRIES,
STOCK_PAIRS fresh pairs each), a patched one whose control did not repeat
too: every try counts, none is thrown away.

With --vdso-only the guest's one consumer is a vDSO getrandom() loop, and
nothing else draws randomness (busy.PROFILES): the kernel then learns of
the fork only from the notification, or from the vDSO itself where it
compares vmclock's generation counter (--devices vmclock or both; the
harness bumps the counter in fresh clones as a VMM does). Same
requirements, on the vDSO alone. With --kernel patched the patched kernel
alone is judged as stock: where the vDSO has no counter to compare
(--devices vmgenid), its clones must repeat, which shows that the vDSO's
own check, not a faster notification, is what closes the window.

With --kernel revert only the series with its checks compiled out is run
(tests/kernels/revert.patch, scripts/build revert), judged as stock: its
new GUIDs must repeat on every interface, which shows that the checks,
not a faster notification, close the window. With --kernel skip5 or
miss5 (planted faults, tests/kernels/) that kernel alone is judged as
the patched kernel, and the phase must fail.

With --vdso-call that loop makes 64 KiB calls and the snapshot is taken
inside one (busy.snapshot): the vDSO must look at the counter again at
the end of a call, or clones finish the cut call with the same bytes.
A kernel that must repeat is judged on the cut call's own outputs
(busy.CUT_CALL), the patched kernel on every output.
"""
import argparse
import sys
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from machinery import busy, qemu, result
from machinery.busy import Counts
from machinery.result import Result, Verdict

# Stock's getrandom() window is small under TCG: one boot in four showed
# it in 2 of 15 pairs (make test, December 2026), so stock gets up to 32.
STOCK_PAIRS, STOCK_TRIES, PATCHED_TRIES = 4, 8, 5
# Patched pairs come from this many snapshots (each a boot of its own), so
# that a failure tied to where one snapshot lands is not judged once.
MIN_SNAPSHOTS = 3
# Same-GUID pairs per try. Busy consumers share each CPU's crng, and two
# identical clones can hand its outputs to them in another order: one
# getrandom() control pair in two repeats nothing. Three make a try whose
# control shows nothing rare (measured: 3 of 5 single pairs differed).
CONTROL = 3


class Opts(NamedTuple):
    name: str
    profile: str
    ifaces: Sequence[str]
    pairs: int
    devices: str = "vmgenid"


# One try of one interface: busy.compare() results per fresh pair, per
# same-GUID pair, and per fresh clone against its snapshot's same-GUID clones.
Try = Tuple[List[Counts], List[Counts], List[Counts]]


def valid(tries: List[Try]) -> List[Try]:
    """The tries where a same-GUID pair repeated: only they can show a
    fork's effect (a try whose control differs met the crng's own reseed, or
    its consumers drew in another order)."""
    return [t for t in tries if any(p[0] for p in t[1])]


def reach(n: int) -> float:
    """The smallest share of forks leaving a repeat that n clean pairs
    would have caught with 95% probability: 1 - 0.05^(1/n)."""
    return 1 - 0.05 ** (1.0 / n) if n else 1.0


def detectability(tries: List[Try]) -> Tuple[int, int]:
    """(clones that repeated their snapshot's same-GUID clones, clones), over
    the tries whose control repeated: how often a missed fork shows per
    clone, measured on a kernel that misses every fork (stock)."""
    clones = [c for _, _, cl in valid(tries) for c in cl]
    return sum(1 for c in clones if c[0]), len(clones)


def outputs(results: List[Counts]) -> str:
    """The real outputs compared, fewest to most, as "a-b" (or "a")."""
    n = sorted({r[2] for r in results})
    return "-".join(str(x) for x in (n[:1] + n[-1:] if len(n) > 1 else n)) or "0"


def unjudged(o: Opts) -> Tuple[str, ...]:
    """Interfaces the patched kernel makes no claim for here: without
    vmclock's counter its vDSO learns of a fork only from the kernel's next
    reseed, as stock's does (the covers say so; vdso-only-vmgenid shows it
    repeats). Busy consumers make that reseed come soon, not before every
    vDSO output: a clone compared with the control shows it."""
    return () if "vmclock" in qemu.DEVICES[o.devices] else ("vdso",)


def verdicts(o: Opts, kernel: str, tries: Dict[str, List[Try]], repeats: Optional[bool] = None,
             detect: Optional[Dict[str, Tuple[int, int]]] = None) -> List[Verdict]:
    """[(name, ok, why)] over every try of one kernel; tries: {iface: [(fresh, control,
    clones)]}, each a list of busy.compare() results (same, run, outputs compared): per
    fresh pair, per same-GUID pair, and per fresh clone against its snapshot's same-GUID
    clones. repeats: the kernel must repeat on each interface, as stock must (default:
    only stock); the patched kernel where its check cannot act, say. detect: {iface:
    detectability()} of stock in the same run, which the patched verdict quotes."""
    if repeats is None:
        repeats = kernel in qemu.REPEATS
    out: List[Verdict] = []
    for iface in o.ifaces:
        allctl = [p for _, c, _ in tries[iface] for p in c]
        fresh = [p for f, _, _ in tries[iface] for p in f]
        clones = [p for _, _, cl in tries[iface] for p in cl]
        out.append(("%s-%s-control-%s" % (o.name, kernel, iface), bool(valid(tries[iface])),
                    "same GUID: %s over %d tries; want a try where one repeats" %
                    (busy.cell(allctl), len(tries[iface]))))
        if repeats:
            # A repeat between fresh GUIDs is the window whichever try
            # showed it: the control validates "no repeat", not "repeat".
            hit, n = detectability(tries[iface])
            out.append(("%s-%s-repeats-%s" % (o.name, kernel, iface),
                        any(p[0] for p in fresh + clones),
                        "new GUIDs, every try: pairs %s, clones against their snapshot's "
                        "same-GUID clones %s (%d of %d beside a repeating control); want a repeat" %
                        (busy.cell(fresh), busy.cell(clones, "clones"), hit, n)))
            continue
        if iface in unjudged(o):
            continue
        ok_tries = [t for t in valid(tries[iface]) if t[2]]
        seen = [p for t in ok_tries for p in t[2]]
        clean = bool(fresh) and not any(p[0] for p in fresh + clones)
        why = ("new GUIDs, every try: pairs %s, clones against their snapshot's same-GUID "
               "clones %s; %d clones from %d snapshots beside a repeating control (want %d "
               "clones, %d snapshots), %s outputs compared each" %
               (busy.cell(fresh), busy.cell(clones, "clones"), len(seen), len(ok_tries), 2 * o.pairs,
                MIN_SNAPSHOTS, outputs(seen)))
        hit, n = (detect or {}).get(iface, (0, 0))
        if hit:
            d = float(hit) / n
            why += ("; stock's clones repeated theirs in %d of %d here, so a fix that misses "
                    "%.0f%% of forks or more would have shown (95%%)" %
                    (hit, n, 100 * min(1.0, reach(len(seen)) / d)))
        elif detect is not None:
            why += "; stock's clones never repeated theirs here: per-clone reach unknown"
        out.append(("%s-%s-%s" % (o.name, kernel, iface),
                    clean and len(seen) >= 2 * o.pairs and len(ok_tries) >= MIN_SNAPSHOTS,
                    why + "; want no repeat"))
    return out


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pairs", type=int, default=9,
                   help="fresh-GUID pairs of the patched kernel, over %d snapshots (default "
                   "%%(default)s; stock: %d a try)" % (MIN_SNAPSHOTS, STOCK_PAIRS))
    p.add_argument("--kernel", choices=("revert", "patched", "skip5", "miss5"),
                   help="only this kernel: revert (the series with its checks compiled out) "
                   "or patched where its check cannot act (the vDSO without vmclock's counter) "
                   "must repeat, as stock; skip5 and miss5 (planted faults) are judged as the "
                   "patched kernel (test names NAME-KERNEL-*)")
    p.add_argument("--vdso-only", action="store_true",
                   help="one vDSO getrandom() loop is the only consumer (test name vdso-only)")
    p.add_argument("--devices", choices=sorted(qemu.DEVICES), default="vmgenid",
                   help="generation devices (default %(default)s); with vmclock the harness "
                   "bumps its counter in fresh clones, as a VMM does; test names get "
                   "-DEVICES unless vmgenid (vdso phases: unless both)")
    p.add_argument("--vdso-call", action="store_true",
                   help="as --vdso-only, in 64 KiB calls, snapshots inside a call (test name vdso-call)")


def run(s: qemu.Settings, o: Opts, kernel: str, repeats: Optional[bool] = None,
        detect: Optional[Dict[str, Tuple[int, int]]] = None) -> Tuple[List[Verdict], Dict[str, List[Try]]]:
    """(verdicts, tries) of one kernel; detect: as verdicts() takes it."""
    # Early in boot the crng reseeds itself every few seconds (RDRAND in
    # TCG's -cpu max): when that is due at the resume, even the control
    # differs. A try that leaves a verdict unmet is redone a little later
    # in uptime (a boot's reseed schedule is much the same each time).
    tries: Dict[str, List[Try]] = {i: [] for i in o.ifaces}
    if repeats is None:
        repeats = kernel in qemu.REPEATS
    ntries = STOCK_TRIES if repeats else PATCHED_TRIES
    for t in range(ntries):
        # The patched kernel's pairs are spread over MIN_SNAPSHOTS boots.
        want = STOCK_PAIRS if repeats else -(-o.pairs // MIN_SNAPSHOTS)
        # A quarter second of output per clone (busy.dump waits longer for
        # in-kernel consumers that have not run yet, and stops early before
        # one laps its ring); too few outputs fails the phase.
        # vdso-call: 16 outputs a call, the cut one first; 32 calls do.
        m = 64 if o.profile == "vdso-call" else 1024
        res, _ = busy.bench(s, kernel, want, CONTROL, 0, m, run=0.25, profile=o.profile,
                            early=busy.EARLY + 3 * t, devices=o.devices, tag=o.name)
        # vdso-call: stock must repeat inside the call the snapshot cut
        # (what the end-of-call check closes), not only in later calls.
        cols = ("fresh-cut", "clone-cut") if o.profile == "vdso-call" and repeats else ("fresh", "clone")
        for iface in o.ifaces:
            tries[iface].append((res[cols[0]][iface], res["control"][iface], res[cols[1]][iface]))
            if not repeats and iface in unjudged(o):
                busy.say("%s try %d: %s not judged (no counter for the vDSO to compare)" %
                         (kernel, t + 1, iface), o.name)
            busy.say("%s try %d: %s new GUIDs %s, each against the same-GUID clones %s; same GUID %s" % (
                kernel, t + 1, iface, busy.cell(res["fresh"][iface]), busy.cell(res["clone"][iface], "clones"),
                busy.cell(res["control"][iface])), o.name)
        got = verdicts(o, kernel, tries, repeats, detect)
        if all(ok for _, ok, _ in got) or (not repeats and any(
                p[0] for i in o.ifaces if i not in unjudged(o)
                for f, _, cl in tries[i] for p in f + cl)):
            return got, tries
        busy.say("%s: a verdict is not met yet (%s): snapshot %d of at most %d" % (
            kernel, ", ".join(n for n, ok, _ in got if not ok), t + 1, ntries), o.name)
    return got, tries


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    if a.pairs < 1:
        sys.exit("window: --pairs %d: at least one fresh pair, or nothing is judged" % a.pairs)
    profile = "vdso-call" if a.vdso_call else "vdso-only" if a.vdso_only else "busy"
    name = "window" if profile == "busy" else profile
    # The vDSO phases' own setup is Firecracker's (both); others are named.
    if a.devices != ("vmgenid" if profile == "busy" else "both"):
        name += "-" + a.devices
    o = Opts(name=name, profile=profile, ifaces=[busy.IFACES[k] for k in busy.PROFILES[profile][1]],
             pairs=a.pairs, devices=a.devices)
    if a.kernel:
        out, _ = run(s, o, a.kernel, True if a.kernel == "patched" else None)
    else:
        # Stock first: the patched verdict quotes how often stock's
        # clones showed their miss, measured here.
        out, stock = run(s, o, "stock")
        got, _ = run(s, o, "patched", detect={i: detectability(stock[i]) for i in o.ifaces})
        out += got
    return [result.verdict(*r) for r in out]
