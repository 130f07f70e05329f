"""An unprivileged process notices a fork from vmclock's page alone.

The vDSO series makes /dev/vmclockN mode 0444, so that userspace (a
library with its own DRBG, say) can map the page and compare
vm_generation_counter itself, with no system call. Here uid 65534 does
exactly that (tests/guest/vmclock-spin.c, started by vmclock-spin.sh): it
maps the page, says so, and spins on loads alone across the snapshot.
The clone whose counter the harness bumps (saved + 1, as the VMM) must
see it move by exactly one; the control clone (counter unchanged) must
still be spinning after QUIET_S, which a second request reads back: alive,
running, CPU time grown, no voluntary context switch (a blocking syscall
would be one). On the stock kernel the device is root's: the same program
must fail to open it with EACCES, while root reads it in the same guest
(so the device is there and only the permission differs).
"""
import argparse
import random
import re
from typing import Any, Dict, List

from machinery import fleet, qemu, result
from machinery.result import Result

NAME = "vmclock-unpriv"
QUIET_S = 5  # the control's bound: the move shows at once where it happens
MOVE_S = 30  # the bumped clone's bound, generous for TCG under load
# parse()'s: each key's value as its line has it (a dict of its fields,
# text, an exit status, True); Any as each judge reads its own keys.
Spin = Dict[str, Any]


def parse(lines: List[str]) -> Spin:
    """What vmclock-spin.sh printed, as a dict: spin, moved, error, exit,
    running, mode, state (each absent if not printed)."""
    out: Spin = {}
    for l in lines:
        kv = {k: int(v) if v.isdigit() else v for k, v in re.findall(r"(\w+)=(\S+)", l)}
        word = l.split(" ", 1)[0]
        if word == "VMCLOCK-SPIN":
            out["spin"] = kv
        elif word == "VMCLOCK-MOVED":
            out["moved"] = kv
        elif word == "VMCLOCK-SPIN-ERROR":
            out["error"] = l.split(" ", 1)[-1]
        elif word == "SPIN-EXIT":
            rc = l.split(" ", 1)[-1]
            out["exit"] = int(rc) if rc.isdigit() else rc
        elif word == "SPIN-RUNNING":
            out["running"] = True
        elif word == "SPIN-MODE":
            out["mode"] = l.split(" ", 1)[-1]
        elif word == "SPIN-STATE":
            out["state"] = kv
    return out


def started_problems(got: Spin, counter: int) -> List[str]:
    """The spinner as started on the source: mapped as 65534, at counter."""
    spin = got.get("spin")
    if not spin:
        return ["no VMCLOCK-SPIN line (%s)" % got.get("error", "no error line either")]
    out = []
    if spin.get("uid") != 65534:
        out.append("runs as uid %s, not 65534" % spin.get("uid"))
    if spin.get("from") != counter:
        out.append("started from %s, the page holds %d" % (spin.get("from"), counter))
    if "exit" in got:
        out.append("exited (%s) instead of spinning" % got["exit"])
    return out


def moved_problems(got: Spin, frm: int) -> List[str]:
    """The bumped clone: the spinner saw from -> from + 1 and ended."""
    m = got.get("moved")
    if not m:
        return ["no VMCLOCK-MOVED within %ds (%s)" % (MOVE_S, "still spinning" if got.get("running")
                                                        else got.get("error", "exit %s" % got.get("exit")))]
    out = []
    if (m.get("from"), m.get("to")) != (frm, frm + 1):
        out.append("moved %s -> %s, want %d -> %d" % (m.get("from"), m.get("to"), frm, frm + 1))
    if got.get("exit") != 0:
        out.append("exit %s after the move" % got.get("exit"))
    return out


def control_problems(before: Spin, got: Spin, after: Spin) -> List[str]:
    """The unbumped clone: two states around QUIET_S of waiting, the wait's
    own output between; still spinning at the end, on loads alone."""
    out = []
    if "moved" in got or not got.get("running"):
        out.append("it stopped spinning: %s" % (got.get("moved") or "exit %s" % got.get("exit")))
    b, a = before.get("state", {}), after.get("state", {})
    if a.get("alive") != 1 or a.get("state") != "R":
        out.append("not running after %ds: %s" % (QUIET_S, a or "no SPIN-STATE"))
    elif not isinstance(b.get("utime"), int) or not a.get("utime", 0) > b["utime"]:
        out.append("no CPU time spent between the reads: utime %s -> %s" % (b.get("utime"), a.get("utime")))
    elif a.get("vcsw") != b.get("vcsw"):
        out.append("voluntary context switches %s -> %s: it blocked" % (b.get("vcsw"), a.get("vcsw")))
    return out


def stock_problems(got: Spin, root_lines: List[str]) -> List[str]:
    """Stock: 65534 refused at open with EACCES, root reads the page."""
    out = []
    if got.get("error") != "open=EACCES":
        out.append("uid 65534: want open=EACCES, got %s" % (got.get("error") or got.get("spin")))
    if not any(l.startswith("VMCLOCK flags=") for l in root_lines):
        out.append("root cannot read the device either: %s" % " | ".join(root_lines))
    return out


def patched(s: qemu.Settings, out: List[Result]) -> None:
    start = random.SystemRandom().randrange(1 << 20, 1 << 40)
    with fleet.Fleet(s, s.obj_of("patched"), tag=NAME, devices="vmclock") as fl:
        src = fl.boot("src", counter_start=start)
        got = parse(src.run("vmclock-spin start", timeout=30))
        print("[%s] patched: /dev/vmclock0 mode %s; source: %s" % (NAME, got.get("mode"), got),
              flush=True)
        bad = started_problems(got, start)
        if bad:
            out.append(result.verdict(NAME + "-moved", False, "source: " + "; ".join(bad)))
            return
        snap = src.snapshot(fl.snapfile("src"))
        saved = src.vmclock().read().counter
        src.quit()
        c = fl.clone("bumped", snap, counter=True)
        got = parse(c.run("vmclock-spin result %d" % MOVE_S, timeout=MOVE_S + 30))
        c.quit()
        bad = moved_problems(got, start) + ([] if saved == start else
                                            ["page held %d at the snapshot, not %d" % (saved, start)])
        out.append(result.verdict(NAME + "-moved", not bad, "; ".join(bad) or
                                   "uid 65534 saw %d -> %d after %d spins on loads alone" % (
                                       start, start + 1, got["moved"].get("spins", -1))))
        k = fl.clone("control", snap, counter=False)
        before = parse(k.run("vmclock-spin state", timeout=30))
        got = parse(k.run("vmclock-spin result %d" % QUIET_S, timeout=QUIET_S + 30))
        after = parse(k.run("vmclock-spin state", timeout=30))
        k.quit()
        bad = control_problems(before, got, after)
        out.append(result.verdict(NAME + "-control", not bad, "; ".join(bad) or
                                   "counter kept at %d: still spinning after %ds, utime %d -> %d "
                                   "ticks, voluntary switches %s" % (
                                       start, QUIET_S, before["state"]["utime"],
                                       after["state"]["utime"], after["state"]["vcsw"])))


def stock(s: qemu.Settings, out: List[Result]) -> None:
    with fleet.Fleet(s, s.obj_of("stock"), tag=NAME + "-stock", devices="vmclock") as fl:
        src = fl.boot("src", counter_start=1)
        got = parse(src.run("vmclock-spin start", timeout=30))
        root = src.run("vmclock-gen", timeout=30)
        print("[%s] stock: /dev/vmclock0 mode %s; uid 65534: %s; root: %s"
              % (NAME, got.get("mode"), got.get("error") or got, " | ".join(root)), flush=True)
        bad = stock_problems(got, root)
        out.append(result.verdict(NAME + "-stock", not bad, "; ".join(bad) or
                                   "uid 65534 refused (open=EACCES), root reads the page: "
                                   "stock userspace cannot watch the counter"))


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    out: List[Result] = []
    patched(s, out)
    stock(s, out)
    return out
