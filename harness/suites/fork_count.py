"""How many forks fork_events counts, case by case, with the harness as
vmclock's VMM.

The patched RNG watches vmclock's counter where there is one and reads
both the counter and the VM Generation ID on every fork acted upon, so
that one fork counts once whichever source shows it first. A "both"
source (vmgenid and vmclock) reads fork_events (C0) once the crng is
ready and is snapshotted; one clone per case of CASES then runs ~2 s,
draws randomness and reads fork_events again: C0 + 1 wherever the
counter, the GUID or both moved (never + 2: both at once is one fork),
C0 where neither did. Each clone's console must show as many "crng
reseeded due to virtual machine fork" lines. A "vmclock" source (no
vmgenid: no notification at all) is forked too, its clone reading
fork_events first thing (the read runs the RNG's check; the exec of the
script that reads draws randomness too): a fork found with nothing told.

Stock control: the base kernel has no fork_events, and its RNG ignores
vmclock; counted by reseed lines, its counter-only and vmclock-only
clones must show 0 (what the series fixes), its new-GUID clone 1 (the
count can be non-zero there).
"""
import argparse
import random
import time
from typing import Container, Dict, List, Optional, Tuple

from machinery import fleet, qemu, result, wire
from machinery.result import Result

NAME = "fork-count-cases"
# case, fresh GUID, counter bumped, forks it must count
CASES = (("both", True, True, 1), ("counter-only", False, True, 1),
         ("guid-only", True, False, 1), ("neither", False, False, 0))
VMCLOCK_ONLY = ("vmclock-only", True, True, 1)  # on a "vmclock" source
# Stock: the counter alone must go unseen, a new GUID seen (by the console).
STOCK = {"both": 1, "counter-only": 0, "vmclock-only": 0}
RUN_S = 2  # each "both" clone runs this long before it is asked
# run()'s per case: (C0, fork_events, reseed lines); None: no fork_events.
Counted = Tuple[Optional[int], Optional[int], int]


def problems(want: int, reseeds: int, c0: Optional[int] = None, n: Optional[int] = None,
             counted: bool = True) -> List[str]:
    """What is wrong with a clone that must count want forks: fork_events
    went c0 -> n (counted=False: a kernel without it, judged by its
    console alone), its console has reseeds reseed lines. [] if nothing."""
    out = []
    if counted and (c0 is None or n is None):
        out.append("no fork_events (source %s, clone %s)" % (c0, n))
    elif counted and c0 is not None and n is not None and n != c0 + want:
        out.append("fork_events %d -> %d, want %d" % (c0, n, c0 + want))
    if reseeds != want:
        out.append("%d reseed line(s) on its console, want %d" % (reseeds, want))
    return out


def source(fl: fleet.Fleet) -> Tuple[Optional[int], str, Optional[str]]:
    """Boot, wait for the crng, read C0, snapshot: (C0, file, GUID)."""
    src = fl.boot("src", counter_start=random.SystemRandom().randrange(1 << 20, 1 << 40))
    lines = src.run("forkcount ready", timeout=60)
    if any(l.startswith("CRNG not ready") for l in lines):
        raise fleet.GuestError("%s source: crng not ready within 30 s" % fl.devices)
    c0 = wire.parse_count(lines)
    snap = src.snapshot(fl.snapfile("src"))
    guid = src.guid() if "vmgenid" in qemu.DEVICES[fl.devices] else "auto"
    src.quit()
    return c0, snap, guid


def clone_count(fl: fleet.Fleet, snap: str, guid: Optional[str], case: str, fresh: bool, counter: bool,
                want: int) -> Tuple[Optional[int], int]:
    """One clone of snap for a case of CASES: (fork_events, reseed lines)."""
    c = fl.clone(case, snap, "auto" if fresh else guid, counter=counter)
    if fl.devices == "both":
        time.sleep(RUN_S)
        n = wire.parse_count(c.run("forkcount draw", timeout=30))
    else:  # no notification: the read is the first thing asked
        n = wire.parse_count(c.run("forkcount read", timeout=30))
    # A 0 is a wait run out: a pass only beside fork_events unchanged (problems()),
    # on stock beside its new-GUID clone's line within the same wait (main()).
    lines = len(c.reseed_lines(forked=want > 0))
    c.quit()
    return n, lines


def run(s: qemu.Settings, kernel: str, cases: Container[str]) -> Tuple[Dict[str, Counted], str]:
    """{case: (C0, fork_events, reseed lines)} on kernel, and its accel.
    Every clone waits for its reseed line as long as a fork would (10 s)
    where its case wants one: stock's 0 there is no line cut short."""
    got: Dict[str, Counted] = {}
    for devices, todo in (("both", [c for c in CASES if c[0] in cases]),
                          ("vmclock", [VMCLOCK_ONLY] if VMCLOCK_ONLY[0] in cases else [])):
        with fleet.Fleet(s, s.obj_of(kernel), tag=NAME, devices=devices) as fl:
            t0 = time.monotonic()
            c0, snap, guid = source(fl)
            print("[%s] %s, %s: source %.1fs, fork_events %s" % (NAME, kernel, devices,
                                                                time.monotonic() - t0, c0), flush=True)
            for case in todo:
                t0 = time.monotonic()
                got[case[0]] = (c0,) + clone_count(fl, snap, guid, *case)
                print("[%s] %s, %s: %s clone %.1fs, fork_events %s, reseed lines %d" % (
                    NAME, kernel, devices, case[0], time.monotonic() - t0, got[case[0]][1],
                    got[case[0]][2]), flush=True)
    return got, fl.accel


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    out: List[Result] = []
    t0 = time.monotonic()
    want = {c[0]: c[3] for c in CASES + (VMCLOCK_ONLY,)}
    got, accel = run(s, "patched", want)
    for case, w in want.items():
        c0, n, lines = got[case]
        bad = problems(w, lines, c0, n)
        out.append(result.verdict("%s-%s" % (NAME, case), not bad, "; ".join(bad) or
                                   "fork_events %s -> %s, %d reseed line(s)" % (c0, n, lines)))
    t1 = time.monotonic()
    got, _ = run(s, "stock", STOCK)
    bad = ["%s: %s" % (case, "; ".join(problems(w, got[case][2], counted=False)))
           for case, w in STOCK.items() if problems(w, got[case][2], counted=False)]
    bad += ["%s: fork_events %s on stock" % (c, got[c][1]) for c in STOCK if got[c][1] is not None]
    out.append(result.verdict(NAME + "-stock", not bad, "; ".join(bad) or
                               "reseed lines: counter-only 0, vmclock-only 0 (its RNG ignores "
                               "vmclock's counter), new GUID 1; no fork_events"))
    print("[%s] patched %.0fs, stock %.0fs (%s)" % (NAME, t1 - t0, time.monotonic() - t1, accel),
          flush=True)
    return out
