"""An open /dev/vmclock0 across an unbind of the vmclock device.

The base driver's file operations use its devm state, which an unbind
through sysfs frees (and whose page it unmaps) while a file may still be
open. The fixes series' patch 4 keeps open files off it: such a file
fails read() and mmap() with ENODEV and polls as POLLHUP | POLLERR, and
the device binds again as before. tests/guest/vmclock-hold.c holds the
file (watched by epoll) across the unbind and reports each call. The
harness, as the VMM, sets NOTIFICATION_PRESENT in the page (and never
sends one): two children then sleep on the file's wait queue across the
unbind, in poll() and in epoll_wait() with EPOLLEXCLUSIVE, and only the
removal can wake them.

Patched (make test-debug: its KASAN kernel): every call after the unbind
says the device is gone, close and bind are clean, no splat on the
console (KASAN would report a wait entry unlinked from freed memory).
Stock, the control: its waiters sleep out their 10 s, and the read()
after the unbind faults in vmclock_miscdev_read; the program dies there.
"""
import argparse
import random
import re
from typing import Dict, List

from machinery import console, fleet, qemu, result, vmclock_page
from machinery.result import Result

NAME = "vmclock-hold"
# What each step must print on a fixed kernel: "VCLK" read back before the
# unbind and after binding again, POLLHUP | POLLERR (0x18) from poll() and
# epoll (the waiters' too, woken by the removal), ENODEV from read() and
# mmap(), and a clean exit.
WANT = {"before": "56434c4b", "waiter-poll": "0x18", "waiter-epoll": "0x18", "unbind": "ok",
        "read": "ENODEV", "poll": "0x18", "epoll": "0x18", "mmap": "ENODEV", "close": "ok",
        "reopen": "56434c4b", "exit": "0"}
RIP = r"RIP: \S+:(?:0x([0-9a-f]+)|([\w.]+)\+)"


def parse(lines: List[str]) -> Dict[str, str]:
    """vmclock-hold.sh's lines as {step: result}; 'exit' from HOLD-EXIT."""
    out: Dict[str, str] = {}
    for line in lines:
        if line.startswith("HOLD-EXIT "):
            out["exit"] = line.split(" ", 1)[1]
        elif line.startswith("HOLD "):
            step, _, res = line[5:].partition("=")
            out[step] = res.split(" ")[0]  # a waiter adds "ms=N"
    return out


def patched_problems(got: Dict[str, str], splats: List[str]) -> List[str]:
    """[] if every step printed what WANT says and the console is clean."""
    return (["%s=%s, want %s" % (k, got.get(k, "(nothing)"), v) for k, v in WANT.items()
             if got.get(k) != v] + ["console: " + s for s in splats[:2]])


def stock_problems(got: Dict[str, str], splats: List[str], where: List[str]) -> List[str]:
    """[] if the file was held across the unbind and its read() never
    returned, killed by a fault in vmclock_miscdev_read (where: the
    functions of the console's faults, in order; a waiter's poll() may
    fault first)."""
    out = []
    if (got.get("before"), got.get("unbind")) != (WANT["before"], "ok"):
        out.append("not held across an unbind: %s" % got)
    if "read" in got:
        out.append("read() returned %s: no use of the freed state seen" % got["read"])
    if not splats:
        out.append("no splat on the console")
    if not any(w.startswith("vmclock_miscdev_read") for w in where):
        out.append("faults in %s, none in vmclock_miscdev_read" % (", ".join(where) or "nothing"))
    return out


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kernel", choices=("patched", "stock"), default="patched",
                   help="stock: the base kernel, whose read() after the unbind must fault "
                   "(test name vmclock-hold-stock)")


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    stock = a.kernel == "stock"
    name, obj = NAME + ("-stock" if stock else ""), s.obj_of(a.kernel)
    # The splat is the stock test's finding, not a failure of the fleet.
    with fleet.Fleet(s, obj=obj, tag=name, devices="vmclock", splats=not stock) as fl:
        # With the counter, the unbind also undoes the RNG's watch and the vDSO's page.
        g = fl.boot("src", counter_start=random.SystemRandom().randrange(1 << 20, 1 << 40),
                    flags=vmclock_page.FLAG_NOTIFICATION)
        got = parse(g.run("vmclock-hold", timeout=60))
        print("[%s] %s" % (name, " ".join("%s=%s" % kv for kv in got.items())), flush=True)
        if stock:
            qemu.wait_for(g.console, RIP, 20, g.proc)
            text = console.read(g.console)
            where = [m.group(2) or qemu.symbol(obj, int(m.group(1), 16)) for m in re.finditer(RIP, text)]
            bad = stock_problems(got, console.splats(text), where)
            why = ("read() after the unbind never returned; faults in %s (waiters: %s)"
                   % (", ".join(where), ", ".join("%s=%s" % (k, got.get(k, "killed"))
                                                 for k in ("waiter-poll", "waiter-epoll"))))
        else:
            bad = patched_problems(got, console.splats(console.read(g.console)))
            why = ("waiters in poll() and exclusive epoll woken by the unbind: 0x18; after it "
                   "read, mmap: ENODEV; poll, epoll: 0x18; bound again: VCLK")
    return [result.verdict(name, not bad, "; ".join(bad) or why)]
