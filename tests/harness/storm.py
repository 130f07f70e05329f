"""Fork storm: a chain of --forks successive restores, each a fork of the last,
while both vCPUs read the RNG and a poller watches fork_events.

Passes if the count ends at --forks, the poller accounts for every fork (a
wake-up per fork, or a jump in the count it read), no two generations
produced the same record, a fresh-GUID sibling of a generation differs from
it while a same-GUID pair of clones repeats, and no console shows a kernel bug.
"""
import os
import re
import time

from . import console, fleet

STORM = 200
# Generations that also get a fresh-GUID sibling (must differ from the chain)
# and a same-GUID control pair (must repeat; the load is paused for them, as
# it would make even identical clones draw in a different order).
SIBLINGS = ()
TRIES = 3


def siblings(fl, g, snap, guid, mine, chain):
    """Problems with generation g's sibling and control, [] if none.

    When a crng reseed is due at the snapshot, even the same-GUID pair
    differs (interrupt timings feed it): then the pair is redone from a new
    snapshot of the chain's clone a second later, as the other fork phases
    do; the chain itself goes on from where it was.
    """
    why = []
    s = fl.clone("g%ds" % g, snap)
    theirs = s.records(3)
    s.quit()
    if any(theirs[n] == mine[n] for n in mine):
        why.append("g%d: a fresh-GUID sibling repeated the chain's records" % g)
    for t in range(TRIES):
        if t:
            print("[storm] g%d: the control pair differed: snapshot %d of at most %d"
                  % (g, t + 1, TRIES), flush=True)
            chain.run_on()
            chain.run("storm pause")
            snap = chain.snapshot(fl.snapfile("g%dctl%d" % (g, t)))
            guid = chain.guid()
            chain.qmp.cmd("cont")
            chain.run("storm resume")
        ctl = []
        for x in ("x", "y"):
            c = fl.clone("g%d%s%d" % (g, x, t), snap, guid)
            ctl.append(c.records(3))
            c.quit()
        if ctl[0] == ctl[1]:
            return why
    why.append("g%d: same-GUID control clones differ from %d snapshots (not measuring the fork)"
               % (g, TRIES))
    return why


def add_args(p):
    p.add_argument("--forks", type=int, default=STORM, help="forks in the chain (default %(default)s)")


def main(a):
    global STORM, SIBLINGS
    STORM = a.forks
    SIBLINGS = sorted({max(1, STORM // 2), STORM})
    t0 = time.monotonic()
    seen, dup = {}, []
    with fleet.Fleet(tag="storm") as fl:
        src = fl.boot("src")
        if "STARTED" not in " ".join(src.run("storm start")):
            print("FAIL fork-storm: could not start the load")
            return 1
        if 1 in SIBLINGS:
            src.run("storm pause")
        snap = src.snapshot(fl.snapfile("g0"))
        guid = src.guid()
        src.quit()
        for g in range(1, STORM + 1):
            c = fl.clone("g%d" % g, snap)
            recs = c.records(3)
            for n, rec in recs.items():
                if rec in seen.values():
                    dup.append("generation %d record %d" % (g, n))
                seen[(g, n)] = rec
            if g in SIBLINGS:
                c.run("storm resume")
                dup += siblings(fl, g, snap, guid, recs, c)
            if g < STORM:
                if g + 1 in SIBLINGS:
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
    got = next((l.split(None, 1)[1] for l in report if l.startswith("COUNT ")), "none").strip()
    count = int(got) if got.isdigit() else -1
    text = "\n".join(report)
    wakes = re.findall(r"before=(\d+) after=(\d+)", text)
    # The poller re-arms after each wake-up, so forks that land meanwhile
    # show as a jump in the count it reads when it re-arms: it has missed
    # nothing as long as its readings only go up and the last is the count.
    seq = [int(v) for v in re.findall(r"count (\d+)|after=(\d+)", text) for v in v if v]
    last = seq[-1] if seq else -1
    why = []
    if count != STORM:
        why.append("fork_events reads %s after %d forks" % (got, STORM))
    if seq != sorted(seq) or last != count:
        why.append("poller's last reading %d of %d forks (%d wake-ups)" % (last, count, len(wakes)))
    if dup:
        why.append("; ".join(dup[:3]))
    print("[storm] %d forks in %.0fs, poller woke %d times, %s" %
          (STORM, time.monotonic() - t0, len(wakes), fl.accel))
    print("FAIL fork-storm: " + "; ".join(why) if why else "PASS fork-storm")
    return 1 if why else 0
