"""Fork tests for 'make test': one PASS/FAIL line each.

One source guest (record server, a WireGuard pair with a live session) is
snapshotted once; clones with fresh GUIDs, clones with the source's GUID
(the negative control), and a chain of clones of clones are restored from
it one at a time. Records are asked for the moment each clone starts: that
is when the same-GUID control repeats and when a missed reseed would show.
The record server is idle at the snapshot: records-differ-* show that each
clone acted on its fork before answering, not that no output of a busy
consumer repeated (the window phases, under load, show that).

first-record-differs (the first record each clone answers, before the
kernel handled the notification), records-differ-*, chain and
first-call-positions (a fresh clone at each of ten snapshots one call
apart, against the source's own next call) claim the series. The stock
kernel fails the first, chain and positions when a clone's first record
beats its notification, nearly always (--kernel stock requires it within
three runs), and the others when its notification came late, so on stock
they are shown, not judged. base-* show base behaviour the series must
keep (a reseed logged once on the notification, WireGuard's new keys),
and stock passes them too, as the controls.
"""
import argparse
import itertools
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from machinery import fleet, qemu, result
from machinery.result import Result

IFACES = ("getrandom", "urandom", "vdso")
NREC = 6  # per clone, interfaces in turn (--records)
NAME = "fork-harness"
CONTROL_TRIES = 3
# What the series claims, which the stock kernel must fail; every other
# check stock passes as well.
SERIES = {"first-record-differs": "first-record-repeats", "chain": "chain-repeats",
          "first-call-positions": "first-call-repeats"}
POSITIONS = 10  # snapshots one call apart (positions())
STOCK_RUNS = 3  # stock must show each of SERIES in one of at most this many runs
# Any: what the guest answered, by key. collect()'s recs (fleet.Records),
# forks and reseeds (int), ping and hs (str).
Clone = Dict[str, Any]
# attempt()'s: a Clone per clone name, and the source's handshake ("hs0")
# and fresh1's snapshot ("snap"), both str.
Try = Dict[str, Any]
# evaluate()'s [(test, [why it failed])].
Outcome = List[Tuple[str, List[str]]]


def collect(c: fleet.Guest, nrec: int, forked: bool = True) -> Clone:
    """Everything a test needs from one clone, records first."""
    recs = c.records(nrec)
    # A record the server could not draw is no record: never "differs".
    odd = sorted({i for i, _ in recs.values()} - set(IFACES))
    if odd:
        raise fleet.GuestError("%s: records labelled %s, not %s" % (c.name, ", ".join(odd), "/".join(IFACES)))
    return {"recs": recs, "forks": int(c.value("forks", "FORKS")),
            "reseeds": len(c.reseed_lines(forked)),
            "ping": c.value("wgpair ping", "PING"),
            "hs": c.value("wgpair hs", "HS")}


def same(x: Clone, y: Clone, iface: str) -> List[int]:
    """Record numbers of iface where x and y produced identical bytes."""
    return [n for n in sorted(x["recs"]) if x["recs"][n][0] == iface and
            y["recs"].get(n) == x["recs"][n]]


def fork_all(fl: fleet.Fleet, t0: float, nrec: int
             ) -> Tuple[List[Try], Dict[str, Clone], List[Tuple[str, str]]]:
    """Source, five clones of one snapshot per try, and two more generations.

    Returns the tries ({clone: collect()} each, with the source's handshake
    time under "hs0") and the chain of clones of the last try's fresh1.
    """
    src = fl.boot("src")
    setup = src.run("wgpair setup")
    if "SETUP ok" not in setup:
        raise fleet.GuestError("wgpair setup: %s" % " | ".join(setup[-3:]))

    # Fresh clones and the same-GUID control pair always come from one
    # snapshot, retaken (fleet.retry) when the control did not repeat.
    def attempt(t: int) -> Try:
        if t:
            src.run_on(t)
        got: Try = {"hs0": src.value("wgpair hs", "HS")}
        time.sleep(1.5)  # a new handshake must land in a later second than hs0
        src.records(3)
        up = src.value("forks", "UPTIME")
        snap = src.snapshot(fl.snapfile("src%d" % t))
        guid = src.guid()
        print("[fork] snapshot %d: source up %ss, GUID %s, %s" % (t + 1, up, guid, fl.accel),
              flush=True)
        clones = [("fresh%d" % i, "auto") for i in (1, 2, 3)] + [("same1", guid), ("same2", guid)]
        for name, g in clones:
            c = fl.clone(name + (str(t) if t else ""), snap, g)
            got[name] = collect(c, nrec, g == "auto")
            if name == "fresh1":
                got["snap"] = c.snapshot(fl.snapfile("fresh1-%d" % t))
            c.quit()
        return got

    tries: List[Try] = fleet.retry(
        "fork", CONTROL_TRIES, attempt,
        lambda g: all(same(g["same1"], g["same2"], i) for i in IFACES),
        lambda g: "new GUIDs %s" % ("; ".join(diverge(g, i) for i in IFACES if diverge(g, i)) or "all differ"))
    src.qmp.cmd("cont")  # runs on beside the chain: positions() wants some uptime
    chain: Dict[str, Clone] = {}
    for name, sn in (("gen2", tries[-1]["snap"]), ("gen2b", tries[-1]["snap"])):
        c = fl.clone(name, sn)
        chain[name] = collect(c, nrec)
        if name == "gen2":
            snap_gen2 = c.snapshot(fl.snapfile("gen2"))
        c.quit()
    for name in ("gen3", "gen3b"):
        c = fl.clone(name, snap_gen2)
        chain[name] = collect(c, nrec)
        c.quit()
    pos = positions(src, fl)
    src.quit()
    print("[fork] %d clones in %.1fs" % (5 * len(tries) + len(chain) + len(pos),
                                        time.monotonic() - t0), flush=True)
    return tries, chain, pos


def positions(src: fleet.Guest, fl: fleet.Fleet) -> List[Tuple[str, str]]:
    """[(source's next record, a fresh clone's first)] at POSITIONS
    snapshots of the running, idle source, one getrandom() call apart.

    A check that acts on all but some calls (tests/kernels/skip5.patch
    skips every fifth) leaks only when a clone's first call is one of
    them, and where that falls is in the snapshot: consecutive calls
    cover every residue, each twice. The source's next call is what a
    clone that missed its fork draws (a same-GUID clone would); the
    crng's own reseeds are timed work, so one lands between a snapshot
    and these calls (milliseconds) seldom, once uptime makes them seconds
    apart.
    """
    out = []
    for k in range(POSITIONS):
        snap = src.snapshot(fl.snapfile("pos%d" % k))
        src.qmp.cmd("cont")
        (_, ours), = src.records(1, request="i").values()
        c = fl.clone("pos%d" % k, snap)
        (_, theirs), = c.records(1, request="i").values()
        c.quit()
        out.append((ours, theirs))
    return out


FRESH = ("fresh1", "fresh2", "fresh3")


def diverge(got: Try, iface: Optional[str], first: Optional[bool] = None) -> str:
    """The records alike between fresh-GUID clones of one try, said: of iface
    (None: any), only the first after the restore (first=True), only later
    ones (False), or all (None)."""
    one = min(got["fresh1"]["recs"])  # the first request each clone got after its restore
    keep = lambda n: first is None or (n == one) == first
    # The first record is also compared with the same-GUID clones': a
    # clone that missed its fork repeats them, whatever its siblings did.
    pairs = [(x, y) for x, y in itertools.combinations(FRESH + ("same1", "same2"), 2)
             if x in FRESH and (first or y in FRESH)]
    return "; ".join("%s %s/%s record%s %s" % (i, x, y, "s" if len(r) > 1 else "",
                                              ",".join("%d%s" % (n, " (1st after restore)" if n == one
                                                                 else "") for n in r))
                     for i in ([iface] if iface else IFACES)
                     for x, y in pairs
                     for r in [[n for n in same(got[x], got[y], i) if keep(n)]] if r)


def evaluate(tries: List[Try], chain: Dict[str, Clone], pos: List[Tuple[str, str]]) -> Outcome:
    """[(test, [why it failed])]: fresh clones of every try, control of the last."""
    out: Outcome = []
    depth = {"fresh1": 1, "fresh2": 1, "fresh3": 1, "same1": 0, "same2": 0}
    clones = [("%s/try %d" % (n, t + 1), got[n], d) for t, got in enumerate(tries) for n, d in depth.items()]
    clones += [(n, chain[n], d) for n, d in (("gen2", 2), ("gen2b", 2), ("gen3", 3), ("gen3b", 3))]
    # Console logs start at the restore, so they hold this restore's line only;
    # dmesg is guest RAM and keeps one line per fork of the whole chain.
    bad = ["%s: %d console/%d dmesg, want %d/%d" % (n, g["reseeds"], g["forks"], min(d, 1), d)
           for n, g, d in clones if g["reseeds"] != min(d, 1) or g["forks"] != d]
    out.append(("base-reseed-once", bad))

    # The first record each clone answers after its restore comes before
    # the kernel handled the notification: the race this series closes,
    # which stock always loses. Later records may come before it or after.
    bad = ["try %d: %s" % (t + 1, d) for t, got in enumerate(tries)
           for d in [diverge(got, None, first=True)] if d]
    out.append(("first-record-differs", ["identical across fresh-GUID clones: " + "; ".join(bad)]
                if bad else []))
    for iface in IFACES:
        bad = ["try %d: %s" % (t + 1, diverge(got, iface)) for t, got in enumerate(tries)
               if diverge(got, iface)]
        out.append(("records-differ-" + iface, ["identical across fresh-GUID clones: " +
                                                "; ".join(bad)] if bad else []))
    last = tries[-1]
    for iface in IFACES:
        nums = [k for k in last["same1"]["recs"] if last["same1"]["recs"][k][0] == iface]
        s = same(last["same1"], last["same2"], iface)
        bad = [] if nums and s == sorted(nums) else \
            ["same-GUID clones repeated %d of %d records (want all)" % (len(s), len(nums))]
        out.append(("control-" + iface, bad))

    bad = []
    for t, got in enumerate(tries):
        for n in FRESH:
            if got[n]["ping"] != "ok" or not int(got[n]["hs"]) > int(got["hs0"]):
                bad.append("%s/try %d (new GUID): ping %s, handshake %s -> %s, want a new one"
                           % (n, t + 1, got[n]["ping"], got["hs0"], got[n]["hs"]))
    for n in ("same1", "same2"):
        if last[n]["ping"] != "ok" or last[n]["hs"] != last["hs0"]:
            bad.append("%s (same GUID): ping %s, handshake %s -> %s, want unchanged"
                       % (n, last[n]["ping"], last["hs0"], last[n]["hs"]))
    out.append(("base-wireguard", bad))

    members = [("fresh1", last["fresh1"])] + sorted(chain.items())
    seen: Dict[str, str] = {}
    bad = []
    for m, g in members:
        for num, (iface, v) in sorted(g["recs"].items()):
            if v in seen:
                bad.append("%s and %s record %d (%s) identical" % (seen[v], m, num, iface))
            seen[v] = m
    out.append(("chain", bad))

    alike = [k for k, (ours, theirs) in enumerate(pos) if ours == theirs]
    out.append(("first-call-positions", ["%d of %d clones drew the source's next bytes (at %s)"
                                         % (len(alike), len(pos), ",".join(map(str, alike)))]
                if alike or len(pos) < POSITIONS else []))
    return out


def unshown(outs: Sequence[Outcome]) -> List[str]:
    """What the series claims that no run of outs failed: on stock, what
    is not yet shown to be the series' doing."""
    return [n for n in SERIES if not any(why for out in outs for m, why in out if m == n)]


def on_stock(outs: Sequence[Outcome], kernel: str = "stock") -> Outcome:
    """[(name, [why])] of evaluate() on the stock kernel, one out per run,
    judged: what the series claims must fail there in some run, base-* and
    the controls pass in every run; the records of later requests, which
    stock repeats only when its notification came late, are left out
    (main() prints them)."""
    def runs(name: str) -> List[Tuple[int, List[str]]]:
        return [(k, why) for k, out in enumerate(outs) for n, why in out if n == name]
    judged: Outcome = []
    for name, _ in outs[0]:
        if name.startswith("records-differ-"):
            continue
        if name in SERIES:
            judged.append(("%s-%s" % (kernel, SERIES[name]), [] if name not in unshown(outs) else
                           ["passed on %s in %d of %d runs: not the series' doing"
                            % (kernel, len(outs), len(outs))]))
        else:
            judged.append(("%s-%s" % (kernel, name), ["run %d: %s" % (k + 1, "; ".join(why))
                                             for k, why in runs(name) if why]))
    return judged


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--records", type=int, default=NREC,
                   help="records per clone, the interfaces in turn (default %(default)s)")
    p.add_argument("--kernel", choices=qemu.KERNELS, default="patched",
                   help="stock, revert: must fail what the series claims (test names "
                   "KERNEL-*); a planted fault (tests/kernels/) is judged as patched")


def run_once(s: qemu.Settings, a: argparse.Namespace, t0: float) -> Outcome:
    """evaluate() of one fork_all() in a fleet of its own."""
    with fleet.Fleet(s, obj=s.obj_of(a.kernel), tag="run") as fl:
        out = evaluate(*fork_all(fl, t0, a.records))
        # On stock, what the series claims fails by design, and timing
        # decides records-differ-*: keep logs for the rest only.
        if any(why for n, why in out if a.kernel not in qemu.REPEATS or
               not (n in SERIES or n.startswith("records-differ-"))):
            fl.keep = True
            print("[fork] console logs kept in %s" % fl.work)
    return out


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    if a.records < len(IFACES):
        sys.exit("fork: --records %d: at least one per interface (%d)" % (a.records, len(IFACES)))
    t0 = time.monotonic()
    out = run_once(s, a, t0)
    if a.kernel in qemu.REPEATS:
        outs = [out]
        # Stock's first record after a restore nearly always beats its
        # notification: a run where every pair won that race shows
        # nothing, and is run again.
        while unshown(outs) and len(outs) < STOCK_RUNS:
            print("[fork] %s run %d: %s did not repeat; again" % (a.kernel, len(outs),
                                                                ", ".join(unshown(outs))), flush=True)
            outs.append(run_once(s, a, time.monotonic()))
        for k, o in enumerate(outs):
            for n, why in o:
                if n.startswith("records-differ-"):
                    print("[fork] %s run %d, %s (not judged: timing): %s"
                          % (a.kernel, k + 1, n, "; ".join(why) or "all differ"))
                elif n in SERIES:
                    print("[fork] %s run %d, %s: %s" % (a.kernel, k + 1, n, "; ".join(why) or "no repeat"))
        out = on_stock(outs, a.kernel)
    elif a.kernel != "patched":
        out = [(a.kernel + "-" + n, why) for n, why in out]
    print("[fork] %d tests in %.1fs" % (len(out), time.monotonic() - t0))
    return [result.verdict(name, not why, "; ".join(why)) for name, why in out]
