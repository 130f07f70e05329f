"""Fork storm: a chain of --forks successive restores, each a fork of the last,
while both vCPUs read the RNG and a poller watches fork_events.

Passes if the count ends at --forks, the poller accounts for every fork (a
wake-up per fork, or a jump in the count it read; a timeout is none), no
two generations produced the same record, at the first, middle and last
depth a fresh-GUID sibling of a generation differs from it while a
same-GUID pair of clones repeats (what a missed reseed would fail: each
generation of the chain goes on from its parent's stream, so the chain
alone cannot), and no console shows a kernel bug.
"""
import argparse
import os
import re
import time
from typing import Dict, List, Optional, Tuple

from machinery import console, fleet, qemu, result, wire
from machinery.result import Result

STORM = 200
TRIES = 3


def siblings(fl: fleet.Fleet, g: int, snap: str, guid: Optional[str], mine: fleet.Records,
             chain: fleet.Guest) -> List[str]:
    """Problems with generation g's siblings and control, [] if none.

    A fresh-GUID sibling of the chain's snapshot must differ from the
    chain's own clone, a same-GUID pair must repeat. When the control
    differs (a crng reseed due at the snapshot), a fresh sibling and the
    pair are retaken from a new snapshot of the chain's clone taken
    later (fleet.retry); the chain itself goes on from where it was.
    """
    def attempt(t: int) -> Tuple[List[int], bool]:
        nonlocal snap, guid, mine
        if t:
            chain.run_on(t)
            chain.run("storm pause")
            snap = chain.snapshot(fl.snapfile("g%dctl%d" % (g, t)))
            guid = chain.guid()
            chain.qmp.cmd("cont")
            mine = chain.records(3)  # what the chain itself drew after this snapshot
            chain.run("storm resume")
        got: List[fleet.Records] = []
        for x, gd in (("s", "auto"), ("x", guid), ("y", guid)):
            c = fl.clone("g%d%s%d" % (g, x, t), snap, gd)
            got.append(c.records(3))
            c.quit()
        return [n for n in mine if got[0].get(n) == mine[n]], got[1] == got[2]

    tries: List[Tuple[List[int], bool]] = fleet.retry(
        "storm g%d" % g, TRIES, attempt, lambda r: r[1],
        lambda r: "fresh-GUID sibling repeated records %s of the chain" % r[0]
        if r[0] else "fresh-GUID sibling differs from the chain")
    why = ["g%d try %d: a fresh-GUID sibling repeated the chain's records %s" % (g, t + 1, r[0])
           for t, r in enumerate(tries) if r[0]]
    if not tries[-1][1]:
        why.append("g%d: same-GUID control clones differ from %d snapshots (not measuring the fork)"
                   % (g, TRIES))
    return why


def poller(report: List[str], forks: int) -> Tuple[List[str], int]:
    """(why the count or the poller is wrong, wake-ups) from 'storm report'."""
    try:
        got = wire.parse_count(report)
    except wire.GuestError:
        got = None
    count = -1 if got is None else got
    text = "\n".join(report)
    rounds = re.findall(r"before=(\d+) after=(\d+) woke=(\d+) timedout=(\d+) errors=(\d+)", text)
    # A wake-up is a poller woken by POLLPRI; a timeout or an error is none.
    wakes = [w for w in rounds if int(w[2]) and not int(w[3]) and not int(w[4])]
    # The poller re-arms after each wake-up, so forks that land meanwhile
    # show as a jump in the count it reads when it re-arms: it has missed
    # nothing as long as its readings only go up and the last is the count.
    seq = [int(v) for v in re.findall(r"count (\d+)|after=(\d+)", text) for v in v if v]
    last = seq[-1] if seq else -1
    why = []
    if count != forks:
        why.append("fork_events reads %s after %d forks" % ("nothing" if got is None else got, forks))
    if seq != sorted(seq) or last != count:
        why.append("poller's last reading %d of %d forks (%d wake-ups)" % (last, count, len(wakes)))
    if len(wakes) != len(rounds):
        why.append("%d of the poller's %d rounds timed out or failed" % (len(rounds) - len(wakes), len(rounds)))
    return why, len(wakes)


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--forks", type=int, default=STORM, help="forks in the chain (default %(default)s)")


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    storm = a.forks
    # Generations that also get a fresh-GUID sibling (must differ from the
    # chain) and a same-GUID control pair (must repeat; the load is paused
    # for them, as it would make even identical clones draw in another order).
    # The chain alone cannot show a missed reseed (each generation goes on
    # from its parent's stream): the siblings are what can fail.
    sibs = {1, max(1, storm // 2), storm}
    t0 = time.monotonic()
    seen: Dict[Tuple[int, int], Tuple[str, str]] = {}
    dup: List[str] = []
    with fleet.Fleet(s, tag="storm") as fl:
        src = fl.boot("src")
        if "STARTED" not in " ".join(src.run("storm start")):
            return [result.verdict("fork-storm", False, "could not start the load")]
        if 1 in sibs:
            src.run("storm pause")
        snap = src.snapshot(fl.snapfile("g0"))
        guid = src.guid()
        src.quit()
        for g in range(1, storm + 1):
            c = fl.clone("g%d" % g, snap)
            recs = c.records(3)
            for n, rec in recs.items():
                if rec in seen.values():
                    dup.append("generation %d record %d" % (g, n))
                seen[(g, n)] = rec
            if g in sibs:
                c.run("storm resume")
                dup += siblings(fl, g, snap, guid, recs, c)
            if g < storm:
                if g + 1 in sibs:
                    c.run("storm pause")
                nxt = c.snapshot(fl.snapfile("g%d" % g))
                guid = c.guid()
                os.unlink(snap)
                snap = nxt
            else:
                report = c.run("storm report", timeout=60)
            c.quit()
            fl.guests.remove(c)  # one clone at a time: keep the teardown list short
            for line in console.splats(console.read(c.console))[:1]:
                dup.append("g%d console: %s" % (g, line))
            if g % 50 == 0:
                print("[storm] %d forks, %.0fs" % (g, time.monotonic() - t0), flush=True)
    why, wakes = poller(report, storm)
    if dup:
        why.append("; ".join(dup[:3]))
    print("[storm] %d forks in %.0fs, poller woke %d times, %s" %
          (storm, time.monotonic() - t0, wakes, fl.accel))
    return [result.verdict("fork-storm", not why, "; ".join(why))]
