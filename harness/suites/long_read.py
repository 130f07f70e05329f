"""Long reads across a fork, judged page by page.

One getrandom() and one /dev/urandom read of --mib MiB each
(tests/guest/bigread.c, into zeroed, page-aligned buffers) are in progress
when the source is stopped and snapshotted. While it is stopped, the host
reads each buffer through the guest's own page tables (QMP memsave, on a
vCPU that runs the reading process) and finds the cut: the first page
whose first bytes are still zero. The kernel looks for a fork at every
page of output, so a clone with a new GUID (and counter) must leave the
stream of a same-generation control at the cut page or the one after it
(the page in flight is finished from the old state), and differ on every
page from there on; the two controls must agree everywhere. A kernel
that looks late (only when it reschedules, or once the notification is
handled) leaves the stream later, at the same page in every clone, and
fails. With --kernel stock (the base) or revert (the series with its
checks compiled out), new GUIDs must follow the control past the page in
flight (the window, as a positive control in the same run: stock to the
end, revert until its notification is handled); the planted fault
lateread (tests/kernels/) is judged as the patched kernel, and fails. Either way no read may have ended
before the snapshot. With --devices vmclock or both, the harness writes
vmclock's counter as the VMM: new clones get the saved value plus one,
the controls the saved value.
"""
import argparse
import os
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from machinery import fleet, qemu, result, wire
from machinery.result import Result, Verdict

IFACES = ("getrandom", "urandom")
PAGE = 4096
PROBE = 64  # bytes read at the start of a page to tell written from zero


def tails(c: fleet.Guest, timeout: float = 180) -> Dict[str, Tuple[str, str, List[str]]]:
    """{iface: (tail hash, seconds, [page hashes])} once both reads of c end."""
    got: Dict[str, Tuple[str, str, List[str]]] = {}
    pages: Dict[str, List[str]] = {i: [] for i in IFACES}
    while len(got) < len(IFACES):
        try:
            r = wire.parse_bigread(c.readline(timeout))
        except wire.GuestError as e:
            raise fleet.GuestError("%s: %s" % (c.name, e))
        if isinstance(r, wire.Pages) and r.iface in pages:
            if r.first != len(pages[r.iface]):
                raise fleet.GuestError("%s: PAGES %s from %d, want %d"
                                       % (c.name, r.iface, r.first, len(pages[r.iface])))
            pages[r.iface] += r.hashes
        elif isinstance(r, wire.Tail):
            got[r.iface] = (r.hash, r.seconds, pages[r.iface])
    return got


def printed(g: fleet.Guest, wait: float = 0.5) -> List[str]:
    """The lines g had printed when it stopped (it is paused: no more come)."""
    out: List[str] = []
    try:
        while True:
            out.append(g.readline(wait))
    except fleet.GuestError:
        return out


def first_zero(written: Callable[[int], bool], n: int) -> int:
    """The first page index in [0, n] for which written(page) is False;
    written is True on a prefix of the pages (n: all are written)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if written(mid):
            lo = mid + 1
        else:
            hi = mid
    return lo


def cut_page(g: fleet.Guest, addr: int, npages: int, work: str) -> int:
    """Where the stopped guest's read of the buffer at addr had got: the
    first page that still starts with zeros. Read through each vCPU's page
    tables in turn: the reading threads' vCPUs map the buffer, an idle one
    may not, which its first page (written before any stop) shows."""
    path = os.path.join(work, "probe.%x" % addr)
    for cpu in (0, 1):
        def head(page: int) -> bytes:
            g.qmp.cmd("memsave", val=addr + page * PAGE, size=PROBE, filename=path,
                      **{"cpu-index": cpu})
            with open(path, "rb") as f:
                return f.read()
        try:
            if not any(head(0)):
                continue
        except RuntimeError:  # QMP: not mapped on this vCPU
            continue
        return first_zero(lambda p: any(head(p)), npages)
    raise fleet.GuestError("%s: buffer 0x%x readable on neither vCPU" % (g.name, addr))


def left_stream(clone: Sequence[str], control: Sequence[str]) -> Optional[int]:
    """The first page where clone differs from control; None if it never does."""
    return next((i for i, (a, b) in enumerate(zip(clone, control)) if a != b), None)


def judge(name: str, cut: int, pages: Dict[str, List[str]], repeats: bool) -> List[Verdict]:
    """Verdicts for one interface. pages: {clone name: [page hashes]},
    fresh1/fresh2 forked, same1/same2 the controls; cut: the first page
    the stopped source had not started. Pure: unit-tested (tests/unit)."""
    out: List[Verdict] = []
    ctl = pages["same1"]
    n = len(ctl)
    alike = sum(a == b for a, b in zip(pages["same1"], pages["same2"]))
    out.append((name + "-control", alike == n and n > cut,
                "the two controls agree on %d of %d pages (the cut at page %d); want all, "
                "or nothing is measured" % (alike, n, cut)))
    for f in ("fresh1", "fresh2"):
        d = left_stream(pages[f], ctl)
        if repeats:
            # Past the page in flight: the series without its checks still
            # leaves the stream once its notification is handled.
            out.append(("%s-repeats-%s" % (name, f), d is None or d > cut + 1,
                        "%s follows the control %s; want past page %d, the one in flight (the "
                        "window: the cut at page %d of %d)" % (
                            f, "to the end" if d is None else "up to page %d" % d, cut + 1, cut, n)))
            continue
        same_after = 0 if d is None else sum(a == b for a, b in zip(pages[f][d:], ctl[d:]))
        ok = d is not None and cut <= d <= cut + 1 and same_after == 0
        out.append(("%s-page-%s" % (name, f), ok,
                    "%s leaves the control at page %s, the cut at page %d; want page %d or %d, "
                    "then every page different (%d of %d after it equal)"
                    % (f, "never" if d is None else d, cut, cut, cut + 1, same_after,
                       n - (d or n))))
    if not repeats:
        left = [left_stream(pages[f], ctl) for f in ("fresh1", "fresh2")]
        start = max(x for x in left if x is not None) if any(x is not None for x in left) else n
        alike = sum(a == b for a, b in zip(pages["fresh1"][start:], pages["fresh2"][start:]))
        out.append((name + "-siblings", start < n and alike == 0,
                    "the two forked clones agree on %d of the %d pages after both left the "
                    "control; want none" % (alike, n - start)))
    return out


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mib", type=int, help="MiB per read (default 64; 24 on a KASAN kernel, "
                   "whose shadow leaves two 64 MiB buffers no room in 256 MiB)")
    p.add_argument("--kernel", choices=qemu.KERNELS, default="patched",
                   help="stock (the base) or revert (the series without its checks): new "
                   "GUIDs must repeat there; a planted fault (skip5, lateread) is judged as "
                   "patched (test names long-read-KERNEL-*)")
    qemu.add_devices_arg(p)


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    obj, repeats = s.obj_of(a.kernel), a.kernel in qemu.REPEATS
    kasan = "CONFIG_KASAN=y" in qemu.kernel_config(obj)
    mib = a.mib or (24 if kasan else 64)
    name = qemu.named("long-read" + ("" if a.kernel == "patched" else "-" + a.kernel), a.devices)
    t0 = time.monotonic()
    out: List[Verdict] = []
    with fleet.Fleet(s, obj=obj, tag="longread", devices=a.devices) as fl:
        src = fl.boot("src")
        src.send("run bigread %d" % mib)
        bufs: Dict[str, Tuple[int, int]] = {}
        while set(bufs) != set(IFACES):
            try:
                r = wire.parse_reading(src.readline(60))
            except wire.GuestError as e:
                raise fleet.GuestError("src: %s" % e)
            bufs[r.iface] = (r.addr, r.pages)
        # Both reads take seconds; let both get into the kernel, then stop
        # them partway through: a read that ended before the stop printed
        # its TAIL line, and then the snapshot cut nothing.
        time.sleep(0.3)
        snap = src.snapshot(fl.snapfile("src"))
        done = [l for l in printed(src) if isinstance(wire.parse_bigread(l), wire.Tail)]
        cuts = {i: cut_page(src, *bufs[i], fl.work) for i in IFACES} if not done else {}
        guid = src.guid()
        src.quit()
        # Clones of a finished read would never print its tail: judge now.
        out.append((name + "-cut", not done, "reads that ended before the snapshot: %s; want none"
                    % (" | ".join(done) or "none")))
        if done:
            return [result.verdict(*r) for r in out]
        got = fl.pairs(snap, guid, tails)
    for iface in IFACES:
        out += judge("%s-%s" % (name, iface), cuts[iface],
                     {n: got[n][iface][2] for n in got}, repeats)
    print("[%s] %d MiB reads, cut at pages %s of %d, 4 clones in %.0fs, %s; read times %s" % (
        name, mib, "/".join(str(cuts[i]) for i in IFACES), bufs[IFACES[0]][1],
        time.monotonic() - t0, fl.accel,
        ", ".join("%s %s" % (n, "/".join(got[n][i][1] for i in IFACES)) for n in sorted(got))))
    return [result.verdict(*r) for r in out]
