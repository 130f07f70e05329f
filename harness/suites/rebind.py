"""The vmgenid driver unbound, then bound again, across forks.

A source guest unbinds the vmgenid device through sysfs and is forked:
its clone must not oops when the hypervisor's notification arrives (the
base kernel left its ACPI notify handler installed on freed driver data)
and, unbound, counts no fork. That clone binds the device again: the
fork it missed is acted upon then (counted once, one reseed line). It is
forked in turn: clones with new GUIDs must each count the fork, log one
reseed and differ; clones with the same GUID must repeat (the control).
Any splat on any console fails the test (the fleet's console-clean scan).

With --module (make test-debug's kernel builds vmgenid as a module) the
same, with the module removed and loaded again instead. On a kernel with
failslab (make test-debug's), the source first binds the driver with each
of its probe's allocations failed in turn, those after the ACPI notify
handler is installed included: a handler or watch a failed probe left
behind would oops or trip KASAN in the first clone, which forks unbound.

With --no-watch the source boots with pci=off: x86 then registers no e820
reserved range above 1 MiB (as with CONFIG_PCI=n), the driver finds
SeaBIOS's buffer in no memory region and declines the every-use watch.
It must still bind and act on the notification: new-GUID clones each
count the fork once it is notified (their records are asked after the
reseed line), same-GUID clones repeat.

With --kernel stock or stable-stock (the base, or the previous base:
make test-stable) the clone forked while unbound must oops there, in
vmgenid_notify. With --kernel stable (the fixes series backported to the
previous base) as rebind, without the missed fork: acting on a fork the
driver missed while unbound is the reseed series' (so is the RNG's own
check: records are asked after the reseed line there, as with --no-watch).
"""
import argparse
import time
from typing import Any, Dict, List, Optional, Tuple

from machinery import console, fleet, kernels, qemu, result
from machinery.result import Result, Verdict

NREC = 3
TRIES = 3


# Test names and guest actions per mode: (take the driver away, its fork, bring it back).
MODES = {"rebind": ("unbind", "unbound-fork", "bind"),
         "reload": ("rmmod", "removed-fork", "insmod"),
         "nowatch": (None, None, "boot")}
# away_and_back()'s findings by step (see away_verdicts()): bound()'s pair
# of str, or a pair of counts (int), or (count, console clean).
Seen = Dict[str, Tuple[Any, Any]]
# A clone's (records, forks counted, reseed lines): clone().
Cloned = Tuple[fleet.Records, int, int]
# Any: main's attempt() gives a Cloned per clone name and "alike": [int, int].
Try = Dict[str, Any]


def bound(g: fleet.Guest, how: Optional[str] = "") -> Tuple[str, str]:
    """'yes' or 'no', and whether vmgenid.ko is loaded ('builtin' if not a module)."""
    w = g.value("vmgenid " + how if how else "vmgenid", "BOUND").split()
    return w[0], w[-1]


def sweep(g: fleet.Guest, name: str) -> Verdict:
    """Bind with each allocation of the probe failed in turn; ends bound."""
    return sweep_verdict(name, g.run("vmgenid sweep-bind", timeout=600))


def sweep_verdict(name: str, lines: List[str]) -> Verdict:
    """(test, ok, why) of 'vmgenid sweep-bind''s lines. Pure: unit-tested."""
    got = dict(l.split(None, 1) for l in lines if " " in l)
    w = (got.get("SWEEP", "") + " x").split()
    ok = (w[0] == "attempts" and w[3] != "0" and w[5] == "yes"
          and got.get("BOUND", "").startswith("yes"))
    return (name + "-sweep", ok, "SWEEP %s, BOUND %s (want failed > 0, ok yes, bound yes)"
            % (got.get("SWEEP"), got.get("BOUND")))


def counts(name: str) -> bool:
    """Only the reseed series counts forks and acts at bind on one missed
    while unbound; on the previous base (the fixes alone) only the
    console tells, where the kernel as shipped oopses."""
    return name != "rebind-stable"


def away_and_back(fl: fleet.Fleet, src: fleet.Guest, mode: str, name: str, out: List[Verdict]) -> fleet.Guest:
    """Take the driver away in the source, fork it, bring it back in the
    clone: that clone, bound again, is returned to be forked. The test
    names start with name."""
    down, _, up = MODES[mode]
    seen: Seen = {"down": bound(src, down)}
    sci = int(src.value("forks", "SCI"))
    snap = src.snapshot(fl.snapfile("src"))
    src.quit()
    u = fl.clone("unbound", snap)
    u.records(NREC)
    time.sleep(2)  # the notification reaches the guest's ACPI handler meanwhile
    # Not notified yet, 0 forks and a clean console would pass untested: the
    # ACPI interrupt count must show the notification (as early_crng.notified).
    got = int(u.value("forks", "SCI"))
    if got <= sci:
        raise fleet.GuestError("%s: ACPI interrupts %d 2 s after the restore, the source's %d: "
                               "the fork was not notified yet" % (u.name, got, sci))
    seen["unbound"] = int(u.value("forks", "FORKS")), not console.splats(console.read(u.console))
    seen["up"] = bound(u, up)
    if counts(name):
        u.records(NREC)
        seen["missed"] = int(u.value("forks", "FORKS")), len(u.reseed_lines(True))
    out.extend(away_verdicts(name, mode, seen))
    return u


def away_verdicts(name: str, mode: str, seen: Seen) -> List[Verdict]:
    """[(test, ok, why)] of away_and_back(): seen["down"], seen["up"]: bound()
    after taking the driver away and bringing it back; seen["unbound"]:
    (forks counted, console clean) of the clone forked meanwhile;
    seen["missed"]: (forks, reseed lines) once it is back, where counts().
    Pure: unit-tested (tests/unit)."""
    down, forked, up = MODES[mode]
    state, mod = seen["down"]
    out = [("%s-%s" % (name, down), state == "no" and (mode == "rebind" or mod == "no"),
            "after %s: bound %s, module loaded %s" % (down, state, mod))]
    forks, clean = seen["unbound"]
    out.append(("%s-%s" % (name, forked), (forks == 0 or not counts(name)) and clean,
                "clone after %s: %d forks counted (want 0%s), console %s"
                % (down, forks, "" if counts(name) else "; not judged on this kernel",
                   "clean" if clean else "has a splat")))
    state, mod = seen["up"]
    out.append(("%s-%s" % (name, up), state == "yes" and (mode == "rebind" or mod == "yes"),
                "after %s: bound %s, module loaded %s" % (up, state, mod)))
    if not counts(name):
        return out
    forks, reseeds = seen["missed"]
    out.append(("%s-missed-fork" % name, (forks, reseeds) == (1, 1),
                "the fork while unbound, acted upon at %s: %d forks, %d reseed lines (want 1, 1)"
                % (up, forks, reseeds)))
    return out


def notified_only(src: fleet.Guest, name: str, out: List[Verdict]) -> fleet.Guest:
    """The source, bound without the watch: it is forked as it is."""
    state, _ = bound(src)
    out.append(notified_only_verdict(name, state, src.console_lines(console.NOTIFIED_ONLY)))
    return src


def notified_only_verdict(name: str, state: str, msg: List[str]) -> Verdict:
    """(test, ok, why): bound() said state, the console has msg, the
    driver's lines saying it declined the watch. Pure: unit-tested."""
    return (name + "-bound", state == "yes" and len(msg) == 1,
            "bound %s, the driver says: %s" % (state, msg[0].strip() if msg else
                                               "nothing of '%s'" % console.NOTIFIED_ONLY))


def clone(fl: fleet.Fleet, n: str, snap: str, guid: Optional[str], notified_only: bool,
          base: Tuple[int, int]) -> Cloned:
    """(records, forks counted, reseed lines) of one clone. Records are
    asked the moment it runs, except where only the notification can
    reseed (no watch, new GUID): there after the reseed line."""
    c = fl.clone(n, snap, guid)
    forked = guid == "auto"
    if notified_only and forked:
        # Bounded; run out, it fails forks-detected (no line, or records drawn before it alike).
        c.reseed_lines()
    recs = c.records(NREC)
    forks = int(c.value("forks", "FORKS")) - base[0]
    # Same GUID: 0 is a 2 s wait run out, a pass only beside all records alike (fork_verdicts).
    reseeds = len(c.reseed_lines(forked)) - base[1]
    c.quit()
    return recs, forks, reseeds


def fork_verdicts(name: str, up: str, tries: List[Try]) -> List[Verdict]:
    """[(test, ok, why)] of the forks of the driver brought back (by up):
    tries as main's attempt() returns them, {fresh1, fresh2, same1, same2:
    clone(), alike: [fresh1/fresh2, same1/same2 records alike]}. New GUIDs
    are judged in every try, the control in the last. Pure: unit-tested."""
    fresh = [(g["alike"][0], [g[n][1:] for n in ("fresh1", "fresh2")]) for g in tries]
    got = tries[-1]
    same = got["alike"][1]
    return [(name + "-forks-detected", all(f == (0, [(1, 1)] * 2) for f in fresh),
             "after " + up + ", new GUIDs, every try: records alike, forks/reseed lines %s "
             "(want 0, 1/1 each)" % "; ".join("%d of %d, %s" % (n, NREC, fr) for n, fr in fresh)),
            (name + "-control", same == NREC and [got[n][1:] for n in ("same1", "same2")] == [(0, 0)] * 2,
             "same GUID: %d of %d alike, forks/reseed lines %s (want all, 0/0)"
             % (same, NREC, [got[n][1:] for n in ("same1", "same2")]))]


def stock_oops(fl: fleet.Fleet, src: fleet.Guest, obj: str, name: str, out: List[Verdict]) -> None:
    """The base kernel's bug, recognised: unbound, then forked, the clone's
    ACPI notify worker runs the handler left installed on freed data."""
    state, _ = bound(src, "unbind")
    snap = src.snapshot(fl.snapfile("src"))
    src.quit()
    u = fl.clone("unbound", snap)
    # A raw address without kallsyms (these kernels), else a symbol.
    rip = u.wait_console(r"RIP: \S+:(?:0x([0-9a-f]+)|([\w.]+)\+)", 20)
    text = console.read(u.console)
    where = rip.group(2) or qemu.symbol(obj, int(rip.group(1), 16))
    out.append(oops_verdict(name, state, text, where))


def oops_verdict(name: str, state: str, text: str, where: str) -> Verdict:
    """(test, ok, why): bound() said state after the unbind, the clone's
    console is text, its RIP line is in function where. Pure: unit-tested."""
    oops = "BUG: kernel NULL pointer dereference" in text and "Workqueue: kacpi_notify" in text
    return (name + "-oops", state == "no" and oops and where.startswith("vmgenid_notify"),
            "unbound %s, then forked: %s in %s from kacpi_notify; want a NULL dereference "
            "in vmgenid_notify (the bug the series' first patches fix)" %
            ("yes" if state == "no" else "no", "oops" if oops else "no oops", where))


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kernel", choices=("patched", "stock") + qemu.STABLE_KERNELS, default="patched",
                   help="stock, stable-stock: a base kernel (build/obj-stock, build/obj-stable-stock), "
                   "where a clone forked while unbound must oops (test names rebind-KERNEL-oops); "
                   "stable: the fixes on the previous base (test names rebind-stable-*)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--module", action="store_true", help="remove and reload vmgenid.ko instead "
                   "(test name reload; a kernel with vmgenid as a module: make test-debug)")
    g.add_argument("--no-watch", action="store_true", help="pci=off: forks acted upon by the "
                   "notification alone (test name nowatch)")


def mode_of(a: argparse.Namespace) -> str:
    return "reload" if a.module else "nowatch" if a.no_watch else "rebind"


def test_name(a: argparse.Namespace) -> str:
    """The name of the run's tests, from its options (also harness/vmtest's
    for an error)."""
    if a.kernel in kernels.BASES:
        return "rebind-" + a.kernel
    return "rebind-stable" if a.kernel == "stable" else mode_of(a)


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    obj, name = s.obj_of(a.kernel), test_name(a)
    if a.kernel in kernels.BASES:
        out: List[Verdict] = []
        # The splat is this test's finding, not a failure of the fleet.
        with fleet.Fleet(s, obj=obj, tag=name, splats=False) as fl:
            stock_oops(fl, fl.boot("src"), obj, name, out)
        return [result.verdict(*r) for r in out]
    mode = mode_of(a)
    if name == "rebind-stable" and mode != "rebind":
        return [result.error(name, "--module and --no-watch are for the patched kernel")]
    up = MODES[mode][2]
    cfg = qemu.kernel_config(obj)
    if mode == "reload" and "CONFIG_VMGENID=m" not in cfg:
        return [result.error("reload", "%s has vmgenid built in: reload needs CONFIG_VMGENID=m" % obj)]
    # Where the RNG has no check of its own, records are asked after the
    # notification's reseed line.
    notified = mode == "nowatch" or a.kernel in qemu.STABLE_KERNELS
    out = []
    with fleet.Fleet(s, obj=obj, tag=name) as fl:
        src = fl.boot("src", append="pci=off" if mode == "nowatch" else "")
        if "CONFIG_FAILSLAB=y" in cfg and mode != "nowatch":
            out.append(sweep(src, name))
        if mode == "nowatch":
            u = notified_only(src, name, out)
        else:
            u = away_and_back(fl, src, mode, name, out)
        guid = u.guid()

        def attempt(t: int) -> Try:
            if t:
                u.run_on(t)
            # A reseed that is due happens now, once, in the source, not
            # in each clone from its own interrupt timings (the nowatch
            # source has drawn nothing since boot: its controls differed).
            u.records(NREC)
            # fork_events counts since boot; a clone's console starts empty.
            base = int(u.value("forks", "FORKS")), 0
            snap2 = u.snapshot(fl.snapfile("bound%d" % t))
            got: Try = {n: clone(fl, n + str(t), snap2, g, notified, base)
                        for n, g in (("fresh1", "auto"), ("fresh2", "auto"), ("same1", guid), ("same2", guid))}
            got["alike"] = [sum(got[x][0][n] == got[y][0][n] for n in got[x][0])
                            for x, y in (("fresh1", "fresh2"), ("same1", "same2"))]
            return got

        tries: List[Try] = fleet.retry(name, TRIES, attempt, lambda g: g["alike"][1] == NREC,
                                       lambda g: "new GUIDs %d of %d records alike, forks/reseed lines %s" % (
                                           g["alike"][0], NREC, [g[n][1:] for n in ("fresh1", "fresh2")]))
        u.quit()
    out += fork_verdicts(name, up, tries)
    return [result.verdict(*r) for r in out]
