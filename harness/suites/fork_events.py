"""fork_events in real clones: one PASS/FAIL line per test.

A source guest has N pollers blocked in poll() on
/proc/sys/kernel/random/fork_events when it is snapshotted. Clones restored
with a new GUID must wake every poller, privileged or not, with the count
up by exactly one; clones with the source's GUID (the negative control)
must not wake them within the bound and keep the count; the first poller
of each clone draws 16 bytes with getrandom() as it wakes, and two new
clones of one snapshot must draw different ones; a chain of three
restores must read 3; on each restore the kernel's reseed line comes
before the pollers return (the guest's printk clock), and the delay
between them is printed. With --devices vmclock (the harness writes
the counter as the VMM, no notification), the RNG acts on the restore at
its next use: the same checks, test names fork-events-vmclock-*.
"""
import argparse
import re
import statistics
from typing import Dict, List, Optional, Tuple, Union

from machinery import fleet, qemu, result
from machinery.result import Result, Verdict

POLLERS = 64
# The pollers' own timeout is long: a restored guest's clock may jump by
# the host time spent between snapshot and restore. The bounds that decide
# are the host's: WAKE_S for a clone that must wake, QUIET_S for the control.
BOUND_MS = 300000
WAKE_S, QUIET_S = 30, 5
# parse()'s: the FE line's fields (str) and "pending" (bool), "draw" (str
# or None); the COUNT; the printk times of "reseed" and "woke"; the FE line.
Parsed = Tuple[Dict[str, Union[str, bool, None]], str, Dict[str, float], str]


def parse(lines: List[str]) -> Parsed:
    fe = next((l for l in lines if l.startswith("FE ")), "FE none")
    vals: Dict[str, Union[str, bool, None]] = dict(re.findall(r"(\w+)=([\d.]+)", fe))
    vals["pending"] = fe == "FE pending"
    count = next((l.split()[1] for l in lines if l.startswith("COUNT ")), "?")
    vals["draw"] = next((l.split()[1] for l in lines if l.startswith("FE-DRAW ")), None)
    ts: Dict[str, float] = {}
    for l in lines:
        m = re.match(r"KMSG \[\s*([\d.]+)\] (.*)", l)
        if m:
            ts["reseed" if "reseeded" in m.group(2) else "woke"] = float(m.group(1))
    return vals, count, ts, fe


def restore(fl: fleet.Fleet, a: argparse.Namespace, name: str, snap: str, guid: Optional[str],
            then_start: bool = False) -> Tuple[Parsed, str]:
    """A clone: guid "auto" is a fork (a new GUID, a new counter), else the
    source's generation (its GUID, its counter): the control. With
    then_start, its own snapshot with pollers started, else ''."""
    c = fl.clone(name, snap, guid)
    wait = QUIET_S if guid != "auto" else WAKE_S
    lines = c.run("fepoll result %d" % wait, timeout=wait + 30)
    if a.debug:
        print(name, lines)
    got = parse(lines)
    snap_next = ""
    if then_start:
        c.run("fepoll start %d %d" % (a.pollers, BOUND_MS))
        snap_next = c.snapshot(fl.snapfile(name))
    c.quit()
    return got, snap_next


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pollers", type=int, default=POLLERS, help="guest threads in poll() (default %(default)s)")
    p.add_argument("--debug", action="store_true", help="print what each clone's pollers reported")
    qemu.add_devices_arg(p)


def latencies(got: Dict[str, Parsed]) -> Tuple[List[float], List[str]]:
    """Reseed line -> pollers back, in ms, for each restore of the chain
    that logged both, and what each logged, said."""
    lat: List[float] = []
    order: List[str] = []
    for name in ("fresh", "gen2", "gen3"):
        ts = got[name][2]
        if "reseed" in ts and "woke" in ts:
            lat.append((ts["woke"] - ts["reseed"]) * 1000)
        order.append("%s: reseed %s, pollers back %s" % (name, ts.get("reseed", "never"),
                                                        ts.get("woke", "never")))
    return lat, order


def verdicts(pre: str, pollers: int, got: Dict[str, Parsed]) -> List[Verdict]:
    """[(test, ok, why)]; got: {fresh, same, fresh-b, gen2, gen3: parse() of
    that restore's 'fepoll result'}, pollers: how many were started.
    Pure: unit-tested (tests/unit)."""
    out: List[Verdict] = []
    a, _, _, fea = got["fresh"]
    d, cd, _, fed = got["same"]
    b = got["fresh-b"][0]
    a2 = got["gen2"][0]
    a3, c3, _, fe3 = got["gen3"]
    lat, order = latencies(got)

    def check(name: str, ok: object, why: str) -> None:
        out.append((name, bool(ok), why))

    n = str(pollers)
    check(pre + "-wake", a.get("woke") == n and a.get("after") == "1" and a.get("before") == "0",
          "new GUID: want %s/%s pollers woken, count 0 -> 1; got %s" % (n, n, fea))
    woke = {k: (v.get("woke"), v.get("errors")) for k, v in (("fresh", a), ("gen2", a2), ("gen3", a3))}
    check(pre + "-many-pollers", all(w == (n, "0") for w in woke.values()),
          "%s pollers (half uid 65534) must all wake on every restore of the chain: "
          "(woke, errors) %s" % (n, woke))
    # What a woken process draws first must not be its sibling's.
    check(pre + "-draws-differ", a["draw"] and b["draw"] and a["draw"] != b["draw"],
          "two new clones of one snapshot: the first poller drew %s and %s as it woke; "
          "want two different values" % (a["draw"], b["draw"]))
    check(pre + "-control", d["pending"] and cd == "0",
          "same GUID: want no poller back within %ds and count 0; got %s, COUNT %s"
          % (QUIET_S, fed, cd))
    check(pre + "-chain", c3 == "3" and a2.get("after") == "2" and a3.get("after") == "3",
          "three restores must read 3; got %s (gen2 after=%s)" % (fe3, a2.get("after")))
    # A poller woken before the reseed would read the clones' shared bytes.
    check(pre + "-after-reseed", len(lat) == 3 and min(lat) >= 0,
          "every restore must log its reseed before its pollers return (printk clock): %s"
          % "; ".join(order))
    return out


def main(opts: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    pre = qemu.named("fork-events", opts.devices)
    with fleet.Fleet(s, tag="fe", devices=opts.devices) as fl:
        src = fl.boot("src")
        if src.value("fepoll count", "COUNT") == "missing":
            return [result.verdict(pre, False, "no /proc/sys/kernel/random/fork_events in this kernel")]
        ready = src.run("fepoll start %d %d" % (opts.pollers, BOUND_MS))
        snap = src.snapshot(fl.snapfile("src"))
        guid = src.guid()
        src.quit()
        if not any(l.startswith("# ready") for l in ready):
            return [result.verdict(pre + "-wake", False, "pollers never started: " + " | ".join(ready))]
        got: Dict[str, Parsed] = {}
        got["fresh"], snap_a = restore(fl, opts, "fresh", snap, "auto", then_start=True)
        got["same"], _ = restore(fl, opts, "same", snap, guid)
        got["fresh-b"], _ = restore(fl, opts, "fresh-b", snap, "auto")
        got["gen2"], snap_a2 = restore(fl, opts, "gen2", snap_a, "auto", then_start=True)
        got["gen3"], _ = restore(fl, opts, "gen3", snap_a2, "auto")
    out = verdicts(pre, opts.pollers, got)
    lat, _ = latencies(got)
    if lat:
        print("[%s] reseed line -> pollers returned: median %.1f ms, max %.1f ms "
              "over %d restores (printk clock, %s)" % (pre, statistics.median(lat), max(lat),
                                                       len(lat), fl.accel))
    return [result.verdict(*r) for r in out]
