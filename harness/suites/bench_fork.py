"""make bench-fork: random outputs repeated across clones, stock vs patched.

Per kernel: boot the busy probe (tests/guest/serve/busy-probe.c, with the in-kernel
get_random_u32()/u64() consumers of tests/kmod/rngprobe.c), stop it while
its consumers run and snapshot it, read each consumer's sequence number from the paused
source (HMP x/xp: the exact snapshot point; the guest is stopped first), restore pairs of clones, and
compare their outputs numbered above that point. Fresh-GUID pairs measure
the window; same-GUID pairs are the control and must repeat. One snapshot
early after boot, one after --late s uptime (the crng reseeds itself
only every 60 s by then, so the control repeats for longer).


Then the same for a guest whose only consumer of randomness is one vDSO
getrandom() loop (nothing else enters the kernel's RNG, so only the
notification or the vDSO itself can act on the fork), snapshotted at the
late uptime only (--no-vdso skips it, --no-busy the busy guest instead),
with vmclock's counter beside vmgenid (Firecracker's setup; the counter is
what the vDSO compares), and on the patched kernel with vmgenid alone,
where the vDSO has no counter and repeats as stock does.
"""
import argparse
import os
import sys
import time
from typing import Dict, List, Sequence

from machinery import busy, fleet, qemu

NAME, BENCHMARK = "bench-fork", True
IFACES, EARLY, say, cell = busy.IFACES, busy.EARLY, busy.say, busy.cell


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pairs", type=int, default=20, help="fresh-GUID pairs per kernel (default %(default)s)")
    p.add_argument("--vdso-pairs", type=int, help="the same for the vDSO-only guest (default: --pairs)")
    for k in ("stock", "patched"):
        p.add_argument("--pairs-" + k, type=int, help="fresh-GUID pairs on the %s kernel only" % k)
        p.add_argument("--vdso-pairs-" + k, type=int, help="vDSO-only pairs on the %s kernel only" % k)
    p.add_argument("--control", type=int, default=2, help="same-GUID pairs per snapshot (default %(default)s)")
    p.add_argument("--kernels", default="stock patched", type=kernels,
                   help="which kernels, 'stock' and/or 'patched' (default '%(default)s')")
    p.add_argument("--late", type=float, default=125,
                   help="uptime of the late snapshot, s; 0: none (default %(default)s)")
    p.add_argument("--outputs", type=int, default=4096,
                   help="outputs compared per interface; 8x that for vDSO (default %(default)s)")
    p.add_argument("--no-busy", action="store_true", help="skip the busy guest")
    p.add_argument("--no-vdso", action="store_true", help="skip the vDSO-only guest")


def kernels(text: str) -> str:
    names = text.split()
    if not names or set(names) - {"stock", "patched"}:
        raise argparse.ArgumentTypeError("'%s': say stock, patched or both" % text)
    return text


def fresh_pairs(a: argparse.Namespace, kernel: str, vdso: bool = False) -> int:
    for n in (getattr(a, "%s_%s" % ("vdso_pairs" if vdso else "pairs", kernel)),
              a.vdso_pairs if vdso else None, a.pairs):
        if n is not None:  # 0 is a number of pairs
            return n
    return a.pairs


def table(title: str, results: Dict[str, busy.Table], ifaces: Sequence[str]) -> None:
    cols = [(k, "fresh") for k in results] + [(k, "control") for k in results]
    print("\n" + title)
    print("(pairs that repeated anything / pairs; longest run of identical outputs, 8 bytes each;\n"
          " get_random_u32 outputs are 4 bytes, matched within %d positions)" % busy.WINDOW)
    head = ["%s %s" % (k, "new GUID" if c == "fresh" else "same GUID") for k, c in cols]
    print("%-15s" % "interface" + "".join("%-30s" % h for h in head))
    for iface in ifaces:
        print("%-15s" % iface + "".join("%-30s" % cell(results[k][c][iface]) for k, c in cols))


def main(a: argparse.Namespace, s: qemu.Settings) -> int:
    control, kernels, late, m = a.control, a.kernels.split(), a.late, a.outputs
    busy_on, vdso_on = not a.no_busy, not a.no_vdso
    per_clone = 4.0  # TCG: restore ~1 s, the serial dump of the outputs ~3 s
    snaps = 2 if late else 1
    est = busy_on * sum((fresh_pairs(a, k) + control * snaps) * 2 * per_clone + max(late, EARLY)
                     for k in kernels)
    if vdso_on:
        est += sum((fresh_pairs(a, k, True) + control) * 2 * per_clone / 4 + 125
                   for k in kernels)
    say("kernels %s, fresh-GUID pairs %s, %d control pairs per snapshot; estimate %.0f min" % (
        " ".join(kernels), "/".join(str(fresh_pairs(a, k)) for k in kernels), control, est / 60))
    results: Dict[str, busy.Table] = {}
    notes: List[str] = []
    for k in kernels:
        kp = qemu.kernel_path(busy.obj(s, k))
        if not os.path.exists(kp):
            raise fleet.GuestError("%s missing (make build%s)" % (kp, "-stock" if k == "stock" else ""))
    for k in kernels if busy_on else ():
        results[k], n = busy.bench(s, k, fresh_pairs(a, k), control, late, m)
        notes += n
    vdso: Dict[str, busy.Table] = {}
    # "patched, vmgenid only": no counter for the vDSO to compare.
    for k, label, devices in [(k, k, "both") for k in kernels] + [("patched", "patched,vmgenid", "vmgenid")]:
        if not vdso_on or k not in kernels:
            continue
        pairs = fresh_pairs(a, k, True)
        if devices == "vmgenid":  # a control of the method, as many pairs as stock
            pairs = min(pairs, fresh_pairs(a, "stock", True))
        vdso[label], n = busy.bench(s, k, pairs, control, max(late, 125), m,
                                    profile="vdso-only", devices=devices)
        notes += n
    if results:
        table("Outputs produced after the snapshot and identical in both clones of a pair",
              results, IFACES)
    if vdso:
        table("The same, vDSO-only guest (one vDSO getrandom() loop, nothing else drawing; "
              "vmgenid and vmclock's counter unless named)",
              vdso, ["vdso"])
    for note in notes:
        print("  " + note)
    print("accelerator %s, %d outputs compared per interface per pair (vDSO x8), %.0fs total" %
          (qemu.probe_accel(qemu.kernel_path(s.obj), qemu.initrd(s.obj), s.accel),
           m, time.monotonic() - busy.T0))
    # A control pair that repeated nothing means the pairs measured
    # something other than the fork: the table above proves nothing then.
    quiet = ["%s %s" % (k, i) for k in results for i in IFACES
             if any(p[0] == 0 for p in results[k]["control"][i])]
    quiet += ["%s vdso-only" % k for k in vdso if any(p[0] == 0 for p in vdso[k]["control"]["vdso"])]
    if quiet:
        print("bench-fork: error: same-GUID control pairs repeated nothing: " + ", ".join(quiet),
              file=sys.stderr)
        return 1
    return 0
