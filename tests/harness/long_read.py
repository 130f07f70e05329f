"""Long reads across a fork: one getrandom() and one /dev/urandom read of
--mib MiB each (tests/guest/bigread.c) are in progress when the
source is stopped and snapshotted. The last MiB of each read is produced
after the snapshot: clones with new GUIDs must differ there, clones with
the source's GUID (the negative control) must not. With --kernel stock
(the base) or revert (the series without its check), new GUIDs must
repeat it (the window, as a positive control in the same run).
Either way no read may have ended before the snapshot. With --devices
vmclock or both, the harness writes vmclock's counter as the VMM: new
clones get the saved value plus one, the controls the saved value.
"""
import time

from . import console, fleet, qemu

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


def printed(g, wait=0.5):
    """The lines g had printed when it stopped (it is paused: no more come)."""
    out = []
    try:
        while True:
            out.append(g.readline(wait))
    except fleet.GuestError:
        return out


def add_args(p):
    p.add_argument("--mib", type=int, help="MiB per read (default 64; 24 on a KASAN kernel, "
                   "whose shadow leaves two 64 MiB buffers no room in 256 MiB)")
    p.add_argument("--kernel", choices=qemu.KERNELS, default="patched",
                   help="stock (the base) or revert (the series without its check): new GUIDs "
                   "must repeat there (test names long-read-KERNEL-*)")
    p.add_argument("--devices", choices=sorted(qemu.DEVICES), default="vmgenid",
                   help="generation devices (default %(default)s; others add -DEVICES to the "
                   "test names)")


def main(a):
    obj, repeats = qemu.obj_of(a.kernel), a.kernel != "patched"
    kasan = "CONFIG_KASAN=y" in qemu.kernel_config(obj)
    mib = a.mib or (24 if kasan else 64)
    name = "long-read-" + a.kernel if repeats else "long-read"
    if a.devices != "vmgenid":
        name += "-" + a.devices
    t0 = time.monotonic()
    out = []
    with fleet.Fleet(obj=obj, tag="longread", devices=a.devices) as fl:
        src = fl.boot("src")
        src.send("run bigread %d" % mib)
        started = set()
        while started != set(IFACES):
            line = src.readline(60)
            if not line.startswith("READING "):
                raise fleet.GuestError("src: %s" % line)
            started.add(line.split()[1])
        # Both reads take seconds; let both get into the kernel, then stop
        # them partway through: a read that ended before the stop printed
        # its TAIL line, and then the snapshot cut nothing.
        time.sleep(0.3)
        snap = src.snapshot(fl.snapfile("src"))
        done = [l for l in printed(src) if l.startswith("TAIL ")]
        guid = src.guid()
        src.quit()
        # Clones of a finished read would never print its tail: judge now.
        out.append((name + "-cut", not done, "reads that ended before the snapshot: %s; want none"
                    % (" | ".join(done) or "none")))
        if done:
            return console.report([console.verdict(*r) for r in out])
        got = fl.pairs(snap, guid, tails)
    for iface in IFACES:
        x, y, d, e = (got[n][iface] for n in ("fresh1", "fresh2", "same1", "same2"))
        if repeats:
            # Without the check one long read is keyed once: the fork cannot reach it.
            out.append(("%s-repeats-%s" % (name, iface), x[0] == y[0],
                        "new clones, last MiB %s/%s: want the same (the window)" % (x[0], y[0])))
        else:
            out.append(("%s-diverge-%s" % (name, iface), x[0] != y[0],
                        "new clones, last MiB %s/%s (reads took %s, %s); want them to differ"
                        % (x[0], y[0], x[1], y[1])))
        out.append(("%s-control-%s" % (name, iface), d[0] == e[0],
                    "the source's generation, last MiB %s/%s; want the same, or nothing is "
                    "measured" % (d[0], e[0])))
    print("[%s] %d MiB reads, 4 clones in %.0fs, %s; read times %s" % (
        name, mib, time.monotonic() - t0, fl.accel,
        ", ".join("%s %s" % (n, "/".join(got[n][i][1] for i in IFACES)) for n in sorted(got))))
    return console.report([console.verdict(*r) for r in out])
