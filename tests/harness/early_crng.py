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
"""

from . import fleet

APPEND = "random.trust_cpu=off random.trust_bootloader=off"
NREC = 4
TRIES = 3


def insecure(g):
    """NREC GRND_INSECURE records, and whether the crng was ready after them."""
    g.send("\n".join(["i"] * NREC))
    recs = []
    for _ in range(NREC):
        parts = g.readline().split()
        if len(parts) != 4 or parts[:1] != ["REC"] or parts[2] != "insecure":
            raise fleet.GuestError("%s: bad record line %r" % (g.name, parts))
        recs.append(parts[3])
    return recs, g.request_value("state", "STATE") == "ready=1"


def main(a):
    out = []
    with fleet.Fleet(tag="early") as fl:
        src = fl.boot("src", append=APPEND)
        credit = src.request_value("credit", "CREDIT")
        if credit != "ok":
            raise fleet.GuestError("src: RNDADDENTROPY failed, errno %s" % credit)
        guid = src.guid()
        for t in range(TRIES):
            if t:
                src.qmp.cmd("cont")
            _, ready = insecure(src)
            if ready:
                raise fleet.GuestError("src: the crng is ready: nothing early to fork")
            snap = src.snapshot(fl.snapfile("src%d" % t))
            got = fl.pairs(snap, guid, insecure, str(t))
            late = [n for n in got if got[n][1]]
            if late:
                raise fleet.GuestError("clone(s) %s: the crng became ready: nothing measured"
                                      % ", ".join(late))
            fresh = sum(x == y for x, y in zip(got["fresh1"][0], got["fresh2"][0]))
            same = sum(x == y for x, y in zip(got["same1"][0], got["same2"][0]))
            if same == NREC:
                break
            print("[early] the control pair differed (%d of %d alike): snapshot %d of at most %d"
                  % (same, NREC, t + 1, TRIES), flush=True)
        src.quit()
    out.append(("early-crng-diverge", fresh == 0,
                "new GUIDs: %d of %d GRND_INSECURE records alike, crng not ready; want 0"
                % (fresh, NREC)))
    out.append(("early-crng-control", same == NREC,
                "same GUID: %d of %d alike; want all" % (same, NREC)))
    for name, ok, why in out:
        print("PASS %s (%s)" % (name, why) if ok else "FAIL %s: %s" % (name, why))
    return 0 if all(ok for _, ok, _ in out) else 1
