"""Fork tests for 'make test': one PASS/FAIL line each.

One source guest (record server, a WireGuard pair with a live session) is
snapshotted once; clones with fresh GUIDs, clones with the source's GUID
(the negative control), and a chain of clones of clones are restored from
it one at a time. Records are asked for the moment each clone starts: that
is when the same-GUID control repeats and when a missed reseed would show.
"""
import itertools
import time

from . import console, fleet

IFACES = ("getrandom", "urandom", "vdso")
NREC = 6  # per clone, interfaces in turn (--records)
NAME = "fork-harness"
CONTROL_TRIES = 3


def collect(c, forked=True):
    """Everything a test needs from one clone, records first."""
    recs = c.records(NREC)
    return {"recs": recs, "forks": int(c.value("forks", "FORKS")),
            "reseeds": len(c.reseed_lines(forked)),
            "unchanged": len(c.console_lines(console.UNCHANGED)),
            "ping": c.value("wgpair ping", "PING"),
            "hs": c.value("wgpair hs", "HS")}


def same(x, y, iface):
    """Record numbers of iface where x and y produced identical bytes."""
    return [n for n in sorted(x["recs"]) if x["recs"][n][0] == iface and
            y["recs"].get(n) == x["recs"][n]]


def fork_all(fl, t0):
    """Source, five clones of one snapshot, and two more generations."""
    src = fl.boot("src")
    setup = src.run("wgpair setup")
    if "SETUP ok" not in setup:
        raise fleet.GuestError("wgpair setup: %s" % " | ".join(setup[-3:]))
    # Fresh clones and the same-GUID control pair always come from one
    # snapshot. Shortly after boot the crng reseeds itself every second
    # (with RDRAND and fresh interrupt timings); in about one snapshot in
    # six that timer is due the moment the clones resume, and then even
    # the control differs without any fork handling. So when the control
    # does not repeat, resume the source and redo all five from a new one.
    for t in range(CONTROL_TRIES):
        if t:
            src.qmp.cmd("cont")
        hs0 = src.value("wgpair hs", "HS")
        time.sleep(1.5)  # a new handshake must land in a later second than hs0
        src.records(3)
        up = src.value("forks", "UPTIME")
        snap = src.snapshot(fl.snapfile("src%d" % t))
        guid = src.guid()
        print("[fork] snapshot %d: source up %ss, GUID %s, %s" % (t + 1, up, guid, fl.accel),
              flush=True)
        got = {}
        clones = [("fresh%d" % i, "auto") for i in (1, 2, 3)] + [("same1", guid), ("same2", guid)]
        for name, g in clones:
            c = fl.clone(name + (str(t) if t else ""), snap, g)
            got[name] = collect(c, g == "auto")
            if name == "fresh1":
                snap_fresh1 = c.snapshot(fl.snapfile("fresh1"))
            c.quit()
        if all(same(got["same1"], got["same2"], i) for i in IFACES):
            break
    src.quit()
    print("[fork] same-GUID control pair: from snapshot %d of at most %d" % (t + 1, CONTROL_TRIES),
          flush=True)
    chain = [("gen2", snap_fresh1), ("gen2b", snap_fresh1)]
    for name, sn in chain:
        c = fl.clone(name, sn)
        got[name] = collect(c)
        if name == "gen2":
            snap_gen2 = c.snapshot(fl.snapfile("gen2"))
        c.quit()
    for name in ("gen3", "gen3b"):
        c = fl.clone(name, snap_gen2)
        got[name] = collect(c)
        c.quit()
    print("[fork] %d clones in %.1fs" % (len(got), time.monotonic() - t0), flush=True)
    return got, hs0


def evaluate(got, hs0):
    out = []
    depth = {"fresh1": 1, "fresh2": 1, "fresh3": 1, "gen2": 2, "gen2b": 2, "gen3": 3, "gen3b": 3, "same1": 0, "same2": 0}
    # Console logs start at the restore, so they hold this restore's line only;
    # dmesg is guest RAM and keeps one line per fork of the whole chain.
    want_console = {n: (1 if d else 0) for n, d in depth.items()}
    bad = ["%s: %d console/%d dmesg, want %d/%d" % (n, got[n]["reseeds"], got[n]["forks"],
                                                    want_console[n], d)
           for n, d in depth.items()
           if got[n]["reseeds"] != want_console[n] or got[n]["forks"] != d]
    out.append(("reseed-once", bad))
    # QEMU notifies on every restore; the driver says when the ID did not move.
    bad = ["%s: %d \"%s\" lines, want %d" % (n, got[n]["unchanged"], console.UNCHANGED, 0 if d else 1)
           for n, d in depth.items() if got[n]["unchanged"] != (0 if d else 1)]
    out.append(("notify-unchanged", bad))

    fresh = ("fresh1", "fresh2", "fresh3")
    for iface in IFACES:
        first = min(got["fresh1"]["recs"])  # the first request each clone got after its restore
        bad = ["%s/%s record%s %s" % (x, y, "s" if len(r) > 1 else "",
                                      ",".join("%d%s" % (n, " (1st after restore)" if n == first else "")
                                               for n in r))
               for x, y in itertools.combinations(fresh, 2)
               for r in [same(got[x], got[y], iface)] if r]
        out.append(("diverge-" + iface, ["identical across fresh-GUID clones: " + "; ".join(bad)]
                    if bad else []))
    for iface in IFACES:
        n = [k for k in got["same1"]["recs"] if got["same1"]["recs"][k][0] == iface]
        s = same(got["same1"], got["same2"], iface)
        bad = [] if n and s == sorted(n) else \
            ["same-GUID clones repeated %d of %d records (want all)" % (len(s), len(n))]
        out.append(("control-" + iface, bad))

    bad = []
    for n in fresh:
        if got[n]["ping"] != "ok" or not int(got[n]["hs"]) > int(hs0):
            bad.append("%s (new GUID): ping %s, handshake %s -> %s, want a new one"
                       % (n, got[n]["ping"], hs0, got[n]["hs"]))
    for n in ("same1", "same2"):
        if got[n]["ping"] != "ok" or got[n]["hs"] != hs0:
            bad.append("%s (same GUID): ping %s, handshake %s -> %s, want unchanged"
                       % (n, got[n]["ping"], hs0, got[n]["hs"]))
    out.append(("wireguard", bad))

    members = ("fresh1", "gen2", "gen2b", "gen3", "gen3b")
    seen, bad = {}, []
    for m in members:
        for n, (iface, v) in sorted(got[m]["recs"].items()):
            if v in seen:
                bad.append("%s and %s record %d (%s) identical" % (seen[v], m, n, iface))
            seen[v] = m
    bad += ["%s logged %d forks in dmesg, want %d" % (n, got[n]["forks"], depth[n])
            for n in members if got[n]["forks"] != depth[n]]
    out.append(("chain", bad))
    return out


def add_args(p):
    p.add_argument("--records", type=int, default=NREC,
                   help="records per clone, the interfaces in turn (default %(default)s)")


def main(a):
    global NREC
    NREC = a.records
    t0 = time.monotonic()
    with fleet.Fleet(tag="run") as fl:
        out = evaluate(*fork_all(fl, t0))
        if any(why for _, why in out):
            fl.keep = True
            print("[fork] console logs kept in %s" % fl.work)
    fails = 0
    for name, why in out:
        print("FAIL %s: %s" % (name, "; ".join(why)) if why else "PASS " + name)
        fails += bool(why)
    print("[fork] %d tests in %.1fs" % (len(out), time.monotonic() - t0))
    return 1 if fails else 0
