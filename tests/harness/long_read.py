"""Long reads across a fork: one getrandom() and one /dev/urandom read of
--mib MiB each (tests/guest/bigread.c) are in progress when the
source is stopped and snapshotted. The last MiB of each read is produced
after the snapshot: clones with new GUIDs must differ there, clones with
the source's GUID (the negative control) must not.
"""
import os
import time

from . import fleet, qemu

MIB = 64
IFACES = ("getrandom", "urandom")


def tails(c, timeout=180):
    """{iface: (hash, seconds)} once both reads of clone c are done."""
    got = {}
    while len(got) < len(IFACES):
        line = c.readline(timeout)
        if line.startswith(("ERROR", "END")):
            raise fleet.GuestError("%s: %s" % (c.name, line))
        if line.startswith("TAIL "):
            _, iface, h, secs = line.split()
            got[iface] = (h, secs)
    return got


def add_args(p):
    p.add_argument("--mib", type=int, help="MiB per read (default 64; 24 on a KASAN kernel, "
                   "whose shadow leaves two 64 MiB buffers no room in 256 MiB)")


def main(a):
    global MIB
    with open(os.path.join(qemu.default_obj(), ".config")) as f:
        kasan = "CONFIG_KASAN=y\n" in f.read()
    MIB = a.mib or (24 if kasan else 64)
    t0 = time.monotonic()
    out = []
    with fleet.Fleet(tag="longread") as fl:
        src = fl.boot("src")
        src.send("run bigread %d" % MIB)
        started = set()
        while started != set(IFACES):
            line = src.readline(60)
            if not line.startswith("READING "):
                raise fleet.GuestError("src: %s" % line)
            started.add(line.split()[1])
        # Both reads take seconds; let both get into the kernel, then stop
        # them partway through (the read times printed below show it).
        time.sleep(0.3)
        snap = src.snapshot(fl.snapfile("src"))
        guid = src.guid()
        src.quit()
        got = fl.pairs(snap, guid, tails)
    for iface in IFACES:
        a, b, d, e = (got[n][iface] for n in ("fresh1", "fresh2", "same1", "same2"))
        out.append(("long-read-diverge-" + iface, a[0] != b[0],
                    "new GUIDs, same last MiB %s (reads took %s, %s)" % (a[0], a[1], b[1])))
        out.append(("long-read-control-" + iface, d[0] == e[0],
                    "same GUID, last MiB differs %s/%s: not measuring the fork" % (d[0], e[0])))
    for name, ok, why in out:
        print("PASS " + name if ok else "FAIL %s: %s" % (name, why))
    print("[long-read] %d MiB reads, 4 clones in %.0fs, %s; read times %s" % (
        MIB, time.monotonic() - t0, fl.accel,
        ", ".join("%s %s" % (n, "/".join(got[n][i][1] for i in IFACES)) for n in sorted(got))))
    return 0 if all(ok for _, ok, _ in out) else 1
