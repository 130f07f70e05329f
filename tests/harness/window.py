"""The race window, stock against patched: the test that fails without the series.

Busy consumers (getrandom, /dev/urandom, the vDSO, in-kernel get_random_u32()
and get_random_u64()) run across a stopped snapshot; pairs of clones are
restored from it and their outputs after the snapshot compared (tests/harness/
busy.py). Requires, per interface:
  stock, new GUIDs     some pair repeats, on each interface (the window this
                       series closes), in the tries whose control repeated
  patched, new GUIDs   no pair repeats anything
  both, same GUID      every pair repeats (the control: no fork, no change)
--pairs fresh-GUID pairs per kernel (default 3), one control pair.

With --vdso-only the guest's one consumer is a vDSO getrandom() loop, and
nothing else draws randomness (busy.PROFILES): the kernel then learns of
the fork only from the notification, or from the vDSO itself where it
reads the generation ID. Same requirements, on the vDSO alone.

With --vdso-call that loop makes 64 KiB calls and the snapshot is taken
inside one (busy.snapshot): the vDSO must look at the ID again at the end
of a call, or clones finish the cut call with the same bytes.
"""
import sys

from . import busy


PAIRS, PROFILE, NAME, IFACES = 3, "busy", "window", ()
M = 1024
TRIES = 3


def verdicts(kernel, tries):
    """Verdicts over every try of one kernel: {iface: [(fresh pairs, control pairs)]}.

    A try whose control did not repeat on an interface says nothing about
    that interface (the crng's own reseed met the resume, or the consumers
    drew in another order): the stock window is looked for in the tries
    whose control repeated. A patched fresh pair that repeated fails,
    whichever try it came from: nothing is thrown away.
    """
    out = []
    for iface in IFACES:
        valid = [(f, c) for f, c in tries[iface] if c and all(p[0] for p in c)]
        allctl = [p for _, c in tries[iface] for p in c]
        out.append(("%s-%s-control-%s" % (NAME, kernel, iface), bool(valid),
                    "same GUID: %s over %d tries; want a try whose control pairs all repeat" %
                    (busy.cell(allctl), len(tries[iface]))))
        if kernel == "stock":
            fresh = [p for f, _ in valid for p in f]
            out.append(("%s-stock-repeats-%s" % (NAME, iface), any(p[0] for p in fresh),
                        "new GUIDs, in tries with a repeating control: %s; want a repeat" %
                        busy.cell(fresh)))
        else:
            fresh = [p for f, _ in tries[iface] for p in f]
            out.append(("%s-patched-%s" % (NAME, iface), bool(fresh) and not any(p[0] for p in fresh),
                        "new GUIDs, every try: %s; want no pair to repeat" % busy.cell(fresh)))
    return out


def add_args(p):
    p.add_argument("--pairs", type=int, default=PAIRS, help="fresh-GUID pairs per kernel (default %(default)s)")
    p.add_argument("--vdso-only", action="store_true",
                   help="one vDSO getrandom() loop is the only consumer (test name vdso-only)")
    p.add_argument("--vdso-call", action="store_true",
                   help="as --vdso-only, in 64 KiB calls, snapshots inside a call (test name vdso-call)")


def main(a):
    global PAIRS, PROFILE, NAME, IFACES
    if a.pairs < 1:
        sys.exit("window: --pairs %d: at least one fresh pair, or nothing is judged" % a.pairs)
    PAIRS = a.pairs
    PROFILE = "vdso-call" if a.vdso_call else "vdso-only" if a.vdso_only else "busy"
    NAME = "window" if PROFILE == "busy" else PROFILE
    IFACES = [busy.IFACES[k] for k in busy.PROFILES[PROFILE][1]]
    busy.TAG = NAME
    out = []
    for kernel in ("stock", "patched"):
        # Early in boot the crng reseeds itself every few seconds (RDRAND
        # in TCG's -cpu max): when that is due at the resume, even the
        # control differs. Then that try says nothing: redo it, a little
        # later in uptime each time (a boot's reseed schedule is much the
        # same each time), and judge all tries together (verdicts()).
        tries = {i: [] for i in IFACES}
        for t in range(TRIES):
            # A quarter second of output per clone (busy.dump waits longer
            # for in-kernel consumers that have not run yet, and stops early
            # before one laps its ring); too few outputs fails the phase.
            # vdso-call: 16 outputs a call, the cut one first; 32 calls do.
            m = 64 if PROFILE == "vdso-call" else M
            res, _ = busy.bench(kernel, PAIRS, 1, 0, m, run=0.25, profile=PROFILE,
                                early=busy.EARLY + 3 * t)
            for iface in IFACES:
                tries[iface].append((res["fresh"][iface], res["control"][iface]))
                busy.say("%s try %d: %s new GUIDs %s; same GUID %s" % (
                    kernel, t + 1, iface, busy.cell(res["fresh"][iface]), busy.cell(res["control"][iface])))
            got = verdicts(kernel, tries)
            if all(ok for name, ok, _ in got if kernel == "stock" or "-control-" in name):
                break
            busy.say("%s: a same-GUID control, or the stock window on some interface, did not show: "
                     "snapshot %d of at most %d" % (kernel, t + 1, TRIES))
        out += got
    for name, ok, why in out:
        print("PASS %s (%s)" % (name, why) if ok else "FAIL %s: %s" % (name, why))
    return 0 if all(ok for _, ok, _ in out) else 1
