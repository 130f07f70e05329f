"""vmclock's VM generation counter across forks, the harness as its VMM.

QEMU 10.0's -device vmclock never sets vm_generation_counter; a VMM such
as Firecracker writes saved + 1 on every load. Here the harness does
(vmclock_page.py): a source with vmgenid and vmclock ("both") starts
with the counter at a random START, is snapshotted stopped, and four
clones of that one file are restored, one per case: new GUID and counter
saved + 1, counter only (the source's GUID), GUID only (counter not
written), neither. In each, the guest program (tests/guest/vmclock-gen.c,
reading /dev/vmclock0 mapped, then through read()) must see VM_GEN_COUNTER_PRESENT,
saved + 1 or saved, and exactly the page the host holds: the write reached
guest memory, nothing else changed it. QEMU's GUID must be new or the
source's as asked. A source with vmclock alone is forked once too. On the
stock kernel, and on the patched one when it is built. What QEMU itself
does to the page (at boot, on load) and what uid 65534 may do with
/dev/vmclock0 are printed, not judged.
"""
import argparse
import os
import random
import re
import time
from typing import Any, Dict, Iterable, List, Optional

from machinery import fleet, qemu, result, vmclock_page
from machinery.result import Result

NAME = "vmclock-counter"
# case, fresh GUID, counter written
CASES = (("both", True, True), ("counter-only", False, True),
         ("guid-only", True, False), ("neither", False, False))
# parse()'s: flags, counter, seq, marker (int) and via (str).
View = Dict[str, Any]


def parse(lines: List[str]) -> Optional[View]:
    """The guest program's VMCLOCK line as a dict (ints but via), or None."""
    for line in lines:
        if line.startswith("VMCLOCK "):
            kv = dict(re.findall(r"(\w+)=(\S+)", line))
            try:
                return {"flags": int(kv["flags"], 16), "counter": int(kv["counter"]),
                        "seq": int(kv["seq"]), "marker": int(kv["marker"]), "via": kv["via"]}
            except (KeyError, ValueError):
                return None
    return None


def problems(seen: Optional[View], counter: int, host: vmclock_page.Page) -> List[str]:
    """What is wrong with a guest's view seen (parse()) of the page, which
    must hold counter and match the host's Page host: [] if nothing."""
    if seen is None:
        return ["no VMCLOCK line"]
    out = []
    if not seen["flags"] & vmclock_page.FLAG_GEN_COUNTER:
        out.append("flags 0x%x lack VM_GEN_COUNTER_PRESENT" % seen["flags"])
    if seen["flags"] & vmclock_page.FLAG_NOTIFICATION:
        out.append("flags 0x%x claim NOTIFICATION_PRESENT" % seen["flags"])
    if seen["counter"] != counter:
        out.append("counter %d, want %d" % (seen["counter"], counter))
    if seen["seq"] & 1:
        out.append("seq_count %d odd" % seen["seq"])
    hv = {k: getattr(host, k) for k in ("flags", "counter", "seq", "marker")}
    if {k: seen[k] for k in hv} != hv:
        out.append("guest read %s, host page %s" % ({k: seen[k] for k in hv}, hv))
    return out


def page_str(p: vmclock_page.Page) -> str:
    return "seq=%d marker=%d flags=0x%x counter=%d" % (p.seq, p.marker, p.flags, p.counter)


def check(name: str, g: fleet.Guest, counter: int, host: vmclock_page.Page, bad: Iterable[str] = (),
          good: str = "") -> Result:
    """A Result: g's guest reads the page (mapped, then through read()),
    which must hold counter and be host's; bad: what is already wrong."""
    bad = list(bad)
    for how in ("mmap", "read"):
        lines = g.run("vmclock-gen" + (" read" if how == "read" else ""), timeout=30)
        wrong = problems(parse(lines), counter, host)
        if wrong:
            bad.append("%s: %s (%s)" % (how, "; ".join(wrong), " | ".join(lines)))
    return result.verdict(name, not bad, "; ".join(bad) if bad else good)


def fork_cases(fl: fleet.Fleet, tag: str, out: List[Result]) -> None:
    """Boot a "both" source, snapshot it, judge the four cases' clones."""
    start = random.SystemRandom().randrange(1 << 20, 1 << 40)
    t0 = time.monotonic()
    src = fl.boot("src", counter_start=start)
    at_s, booted = src.page_from_qemu, src.vmclock().read()
    assert at_s is not None, "a vmclock fleet's boot() keeps the page as QEMU made it"
    out.append(check("%s-boot-%s" % (NAME, tag), src, start, booted,
                     good="guest reads counter %d as written at -S" % start))
    print("[%s] %s: page as QEMU made it (-S): %s; after boot: %s" %
          (NAME, tag, page_str(at_s), page_str(booted)), flush=True)
    print("[%s] %s: uid 65534: %s" % (NAME, tag, src.value("vmclock-gen nobody", "VMCLOCK-ACCESS")),
          flush=True)
    t_boot = time.monotonic() - t0
    snap = src.snapshot(fl.snapfile("src"))
    saved, guid = src.vmclock().read(), src.guid()
    src.quit()
    t0, loads = time.monotonic(), set()
    for case, fresh, counter in CASES:
        c = fl.clone(case, snap, "auto" if fresh else guid, counter=counter)
        cguid, want = c.guid(), saved.counter + 1 if counter else saved.counter
        assert c.page_from_qemu is not None, "a vmclock fleet's clone() keeps the page as loaded"
        loads.add(page_str(c.page_from_qemu))
        bad = [] if (cguid != guid) == fresh else [
            "GUID %s, source's %s: want %s" % (cguid, guid, "a new one" if fresh else "the same")]
        out.append(check("%s-%s-%s" % (NAME, case, tag), c, want, c.vmclock().read(), bad,
                         "counter %d (saved %d), GUID %s" % (want, saved.counter,
                                                              "new" if fresh else "kept")))
        c.quit()
    print("[%s] %s: page at snapshot: %s; as QEMU loaded it, before the harness's write: %s" %
          (NAME, tag, page_str(saved), " / ".join(sorted(loads))), flush=True)
    print("[%s] %s: boot %.1fs, 4 clones %.1fs (%s)" % (NAME, tag, t_boot, time.monotonic() - t0, fl.accel),
          flush=True)


def vmclock_alone(s: qemu.Settings, obj: str, tag: str, out: List[Result]) -> None:
    """The "vmclock" setup (no vmgenid): one clone's counter is saved + 1."""
    with fleet.Fleet(s, obj, tag="vmclock-alone", devices="vmclock") as fl:
        src = fl.boot("src", counter_start=7)
        snap = src.snapshot(fl.snapfile("src"))
        saved = src.vmclock().read()
        src.quit()
        c = fl.clone("clone", snap)
        out.append(check("%s-vmclock-alone-%s" % (NAME, tag), c, saved.counter + 1, c.vmclock().read(),
                         good="counter %d after a load of %d, no vmgenid" % (saved.counter + 1,
                                                                             saved.counter)))


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kernel", action="append", choices=("stock", "patched"),
                   help="run on this kernel (repeat; default: stock, and patched if built)")


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    kernels = a.kernel
    if not kernels:
        patched = qemu.kernel_path(s.obj_of("patched"))
        kernels = ["stock"] + (["patched"] if os.path.exists(patched) else [])
        if len(kernels) == 1:
            print("[%s] no patched kernel at %s: stock only" % (NAME, patched))
    out: List[Result] = []
    for tag in kernels:
        obj = s.obj_of(tag)
        with fleet.Fleet(s, obj, tag="vmclock-gen", devices="both") as fl:
            fork_cases(fl, tag, out)
        vmclock_alone(s, obj, tag, out)
    return out
