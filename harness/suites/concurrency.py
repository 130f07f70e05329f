"""Concurrency: forks that land while every CPU hammers getrandom(2),
/dev/urandom and the vDSO, and while WireGuard carries pings as fast as
they are answered.

A chain of --forks restores with new GUIDs from a snapshot of the busy
source. Each clone must reseed once, make a new WireGuard handshake and
pass traffic again within --wait s, answer record requests, keep its
load running, and show no kernel bug or stall on its console; the first
clone's records differ from those of a fresh-GUID sibling of it (under
load even same-GUID clones may draw in another order, so this shows that
nothing repeated here, not the reseed: the window phases have a control).
All of this the stock kernel passes as well (measured): it shows base
behaviour the series must keep under load, not the series' effect, hence
the result's name, base-forks-under-load.
"""
import argparse
import os
import time
from typing import List, Optional, Tuple

from machinery import console, fleet, qemu, result
from machinery.result import Result

FORKS, WAIT = 3, 30.0


def status(g: fleet.Guest) -> Tuple[int, int]:
    rx, load = g.value("busy status", "RX").split(" LOAD ")
    return int(rx), int(load)


def flowing(g: fleet.Guest, wait: float, t0: Optional[float] = None) -> Optional[float]:
    """Seconds until the tunnel's receive count grows by 10, or None."""
    t0 = t0 or time.monotonic()
    rx0, _ = status(g)
    while time.monotonic() - t0 < wait:
        if status(g)[0] >= rx0 + 10:
            return time.monotonic() - t0
        time.sleep(0.5)
    return None


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--forks", type=int, default=FORKS, help="restores in the chain (default %(default)s)")
    p.add_argument("--wait", type=float, default=WAIT,
                   help="seconds a clone has to pass traffic again (default %(default)s)")


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    t0 = time.monotonic()
    why: List[str] = []
    notes: List[str] = []
    with fleet.Fleet(s, tag="conc") as fl:
        src = fl.boot("src")
        if "SETUP ok" not in " ".join(src.run("wgpair setup")):
            return [result.verdict("base-forks-under-load", False, "wgpair setup failed")]
        started = " ".join(src.run("busy start"))
        if "STARTED" not in started or flowing(src, 10) is None:
            return [result.verdict("base-forks-under-load", False,
                                   "load or tunnel traffic did not start: " + started)]
        hs = int(src.value("wgpair hs", "HS"))
        time.sleep(1.1)  # a new handshake lands in a later second
        snap = src.snapshot(fl.snapfile("c0"))
        src.quit()
        # A sibling of the first clone, from the same busy snapshot: no
        # record the two are asked for may be alike.
        c = fl.clone("c1b", snap)
        sibling = c.records(3)
        c.quit()
        for g in range(1, a.forks + 1):
            c = fl.clone("c%d" % g, snap)
            recs = c.records(3)  # raises unless all three come back well-formed
            t = flowing(c, a.wait)
            if g == 1:
                alike = [n for n in recs if sibling.get(n) == recs[n]]
                if alike:
                    why.append("c1 and its fresh-GUID sibling: records %s alike" % alike)
            nhs = int(c.value("wgpair hs", "HS"))
            _, load = status(c)
            bugs = console.splats(console.read(c.console))
            reseeds = len(c.reseed_lines())
            if t is None:
                why.append("c%d: no traffic through the tunnel within %.0fs" % (g, a.wait))
            if nhs <= hs:
                why.append("c%d: no new handshake (%d -> %d)" % (g, hs, nhs))
            if load != 2:
                why.append("c%d: %d of 2 loaders alive" % (g, load))
            if reseeds != 1:
                why.append("c%d: %d reseed lines, want 1" % (g, reseeds))
            why += ["c%d console: %s" % (g, b) for b in bugs[:2]]
            notes.append("c%d traffic again after %s" % (g, "%.1fs" % t if t else "never"))
            hs = nhs
            if g < a.forks:
                time.sleep(1.1)
                nxt = c.snapshot(fl.snapfile("c%d" % g))
                os.unlink(snap)
                snap = nxt
            c.quit()
        if why:
            fl.keep = True
    print("[concurrency] %d forks under load in %.0fs, %s; %s" %
          (a.forks, time.monotonic() - t0, fl.accel, ", ".join(notes)))
    return [result.verdict("base-forks-under-load", not why, "; ".join(why))]
