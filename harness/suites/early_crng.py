"""A fork before the crng is ready: the early crng must not repeat either.

The source boots trusting neither RDRAND nor the bootloader's seed, and is
credited 128 bits from userspace: its crng is then CRNG_EARLY, one key
advanced by fast key erasure alone, until interrupts credit 128 more bits
(about a minute). Pairs of clones read getrandom(GRND_INSECURE), the one
interface that reads it then:
  new GUIDs   no record alike (the stock kernel repeats them all: it only
              mixes the new ID into the pool, which the early key ignores)
  same GUID   every record alike (the control: no fork, no change)
Every clone must still report the crng not ready, or nothing was measured.
Patched clones with new GUIDs log the early key's replacement, never a
reseed of a crng that is not ready.
With --kernel stock (the base), new GUIDs must repeat (the positive
control, in the same run). On the previous base (make test-stable) the
same two: stable-stock must repeat, stable (the fixes alone) must not,
read once the notification is handled. Before that, output repeats in
every crng state until the reseed series' own check; the fixes do not
claim it.
"""
import argparse
import time
from typing import List, Sequence, Tuple

from machinery import console, fleet, kernels, qemu, result, wire
from machinery.result import Result, Verdict

APPEND = "random.trust_cpu=off random.trust_bootloader=off"
NREC = 4
TRIES = 3
# What attempt() returns (see verdicts()).
Try = Tuple[int, int, List[Tuple[int, int]]]


def insecure(g: fleet.Guest) -> Tuple[List[str], bool]:
    """NREC GRND_INSECURE records, and whether the crng was ready after them."""
    got = g.records(NREC, request=wire.INSECURE)
    if any(iface != "insecure" for iface, _ in got.values()):
        raise fleet.GuestError("%s: want insecure records, got %s" % (g.name, sorted(got.values())[:1]))
    recs = [data for _, (_, data) in sorted(got.items())]
    return recs, g.request_value(wire.STATE, "STATE") == "ready=1"


def told(g: fleet.Guest) -> Tuple[int, int]:
    """A fresh clone's fork log lines: (early rekeys, reseeds)."""
    if not g.name.startswith("fresh"):
        return 0, 0
    return len(g.reseed_lines(True, console.EARLY_REKEY)), len(g.console_lines(console.RESEED))


def notified(g: fleet.Guest, kernel: str, sci: int) -> None:
    """On the previous base's kernels, wait until the notification is
    handled: a fresh clone of the fixed kernel logs the new key (a bounded
    wait). The base as shipped logs nothing: 2 s, then its ACPI interrupt
    count must be above the source's (sci), or the fork was not notified
    yet and a repeat would show nothing."""
    fresh = g.name.startswith("fresh")
    if kernel == "stable" and fresh:
        # Run out, it fails -logged (told() wants the line) or -diverge (records drawn first).
        g.reseed_lines(True, console.EARLY_REKEY)
    elif kernel in qemu.STABLE_KERNELS:
        time.sleep(2)
        got = int(g.value("forks", "SCI"))
        if fresh and got <= sci:
            raise fleet.GuestError("%s: ACPI interrupts %d 2 s after the restore, the source's %d: "
                                   "the fork was not notified yet" % (g.name, got, sci))


def verdicts(name: str, tries: Sequence[Try], repeats: bool) -> List[Verdict]:
    """[(test, ok, why)] over every try, each as attempt() returns it:
    (fresh1/fresh2 records alike, same1/same2 records alike, [(early rekey,
    reseed lines) of fresh1, of fresh2]). New GUIDs are judged in every try,
    the control in the last; repeats: a base kernel, where new GUIDs must
    repeat. Pure: unit-tested (tests/unit)."""
    out: List[Verdict] = []
    fresh, same = [r[0] for r in tries], tries[-1][1]
    if repeats:
        out.append((name + "-repeats", all(f == NREC for f in fresh),
                    "new GUIDs: %s of %d GRND_INSECURE records alike in %d tries; want all alike"
                    % ("/".join(map(str, fresh)), NREC, len(tries))))
    else:
        out.append((name + "-diverge", not any(fresh),
                    "new GUIDs: %s of %d GRND_INSECURE records alike in %d tries, crng not ready; "
                    "want 0" % ("/".join(map(str, fresh)), NREC, len(tries))))
    if not repeats:
        logs = [x for r in tries for x in r[2]]
        out.append((name + "-logged", all(e == 1 and r == 0 for e, r in logs),
                    "new GUIDs, (early rekey, reseed) lines per clone: %s; want (1, 0) each"
                    % " ".join("(%d, %d)" % x for x in logs)))
    out.append((name + "-control", same == NREC,
                "same GUID: %d of %d alike; want all" % (same, NREC)))
    return out


def add_args(p: argparse.ArgumentParser) -> None:
    # Not revert: the early crng's own fix comes before the check.
    p.add_argument("--kernel", choices=("patched", "stock") + qemu.STABLE_KERNELS, default="patched",
                   help="stock, stable-stock: a base kernel, where new GUIDs must repeat "
                   "(test names early-crng-KERNEL-*); stable: the fixes on the previous base")
    qemu.add_devices_arg(p)


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    repeats = a.kernel in kernels.BASES
    name = "early-crng" if a.kernel == "patched" else "early-crng-" + a.kernel
    name = qemu.named(name, a.devices)
    with fleet.Fleet(s, obj=s.obj_of(a.kernel), tag="early", devices=a.devices) as fl:
        src = fl.boot("src", append=APPEND)
        credit = src.request_value(wire.CREDIT, "CREDIT")
        if credit != "ok":
            raise fleet.GuestError("src: RNDADDENTROPY failed, errno %s" % credit)
        guid = src.guid()

        sci = -1

        def collect(g: fleet.Guest) -> Tuple[List[str], bool, int, int]:
            notified(g, a.kernel, sci)
            return insecure(g) + told(g)

        def attempt(t: int) -> Try:
            nonlocal sci
            if t:
                src.qmp.cmd("cont")
            _, ready = insecure(src)
            if ready:
                raise fleet.GuestError("src: the crng is ready: nothing early to fork")
            if a.kernel in qemu.STABLE_KERNELS:
                sci = int(src.value("forks", "SCI"))
            got = fl.pairs(src.snapshot(fl.snapfile("src%d" % t)), guid,
                           collect, str(t))
            late = [n for n in got if got[n][1]]
            if late:
                raise fleet.GuestError("clone(s) %s: the crng became ready: nothing measured"
                                      % ", ".join(late))
            alike = [sum(x == y for x, y in zip(got[a][0], got[b][0]))
                     for a, b in (("fresh1", "fresh2"), ("same1", "same2"))]
            return alike[0], alike[1], [got[n][2:] for n in ("fresh1", "fresh2")]

        tries: List[Try] = fleet.retry("early", TRIES, attempt, lambda r: r[1] == NREC,
                                       lambda r: "new GUIDs %d of %d records alike" % (r[0], NREC))
        src.quit()
    return [result.verdict(*r) for r in verdicts(name, tries, repeats)]
