"""Busy consumers across a fork: the machinery of make bench-fork and of
the window phase of make test.

Per kernel: boot the busy probe (tests/guest/serve/busy-probe.c, with the in-kernel
get_random_u32()/u64() consumers of tests/kmod/rngprobe.c), stop it while
its consumers run and snapshot it, read each consumer's sequence number from
the paused source by physical address (HMP xp: the exact snapshot point,
whatever each vCPU was running; checked against the probe's own count), restore pairs of
clones, and compare their outputs numbered above that point. Fresh-GUID
pairs measure the window; same-GUID pairs are the control and must repeat.
Fails closed: a clone whose dump is missing, malformed or too short to
compare is an error, never "no repeat".
"""
import os
import re
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple, cast

from . import fleet, qemu, wire

IFACES = ("getrandom", "urandom", "vdso", "get_random_u32", "get_random_u64")
# Guest profiles: what the probe runs (tests/guest/NAME.sh) and which
# streams it fills. "probe-vdso": one vDSO loop and nothing else drawing
# randomness, so that nothing but the notification (or the vDSO itself)
# tells the kernel of the fork.
# "probe-vdso-call": the same loop in 64 KiB calls, one output per 4 KiB,
# snapshotted only inside a call.
PROFILES: Dict[str, Tuple[str, Tuple[int, ...]]] = {
    "busy": ("probe", (0, 1, 2, 3, 4)), "vdso-only": ("probe-vdso", (2,)),
    "vdso-call": ("probe-vdso-call", (2,))}
# vdso-call: a call's 16 outputs are stored when it returns, so the first
# 16 after the snapshot's count are the cut call's; dumps start one later
# (the output at the count may predate the snapshot): 15 of them.
CUT_CALL = 15
# get_random_u32() outputs are 4 bytes: matched only against the sibling's
# own u32 stream near the same position, or chance would make matches.
NARROW = (False, False, False, True, False)
WINDOW = 64
# Fewer real outputs than this after the snapshot, per interface and clone,
# means the consumer did not run: nothing was measured.
MIN_OUTPUTS = 64
KRING = 1 << 20  # slots per in-kernel consumer's ring (tests/kmod/rngprobe.c)
RING = 1 << 20  # slots per consumer's ring in the probe (tests/guest/serve/busy-probe.c)
# How long a restored clone's consumers may take to draw anything at all:
# on a host busy with other guests, a clone's vCPUs can stall for over
# 10 s ("clocksource: Watchdog remote CPU 1 read timed out"), and a
# clone that drew nothing is a failed measurement, not a verdict.
STARVED = 30
EARLY = 10.0
T0 = time.monotonic()
TAG = "bench-fork"
# A clone's outputs: one list of hex strings per interface of IFACES, '-' * 16 where gone.
Outs = List[List[str]]
# compare()'s per interface: (outputs repeated, longest run of them, outputs compared).
Counts = Tuple[int, int, int]
# bench()'s {column: {iface: [Counts per pair or clone]}}.
Table = Dict[str, Dict[str, List[Counts]]]


def obj(s: qemu.Settings, kernel: str) -> str:
    """A kernel's build: "patched" is --obj (the debug kernel, a scratch build)."""
    return s.obj_of(kernel)


def say(msg: str, tag: str = TAG) -> None:
    """A progress line, tagged with the phase that runs the benchmark."""
    print("[%s %4.0fs] %s" % (tag, time.monotonic() - T0, msg), flush=True)


def peek(src: fleet.Guest, cmd: str, cpu: int = 0) -> Optional[int]:
    out = src.qmp.cmd("human-monitor-command", **{"command-line": cmd, "cpu-index": cpu})
    m = re.search(r":\s*(0x[0-9a-f]+)", out)
    return int(m.group(1), 16) if m else None


def snapshot(fl: fleet.Fleet, src: fleet.Guest, phys: Sequence[str], kaddrs: Sequence[str], name: str,
             tries: int = 5, inside: Optional[str] = None, tag: str = TAG) -> Tuple[str, float, List[int]]:
    """Snapshot and read the consumers' counters from the paused source.

    phys: the physical addresses of the probe's own counters (it locked
    their page), read whatever each vCPU was running; kaddrs: the kernel
    consumers'. Each value is then checked against the probe's own answer
    once it runs again: no smaller, and less than a ring's worth larger.
    inside: the physical address of the probe's in_call flag, which must be
    set (a vDSO call was cut); otherwise resume briefly and snapshot again.
    """
    for t in range(tries):
        up = float(src.request_value(wire.UPTIME, "UPTIME"))
        path = src.snapshot(fl.snapfile(name))
        vals = [peek(src, "xp /1gx " + a) for a in phys]
        kvals = [peek(src, "xp /1gx " + a) for a in kaddrs]
        cut = peek(src, "xp /1gx " + inside) if inside else 1
        src.qmp.cmd("cont")
        if None in vals + kvals or cut is None:
            raise fleet.GuestError("%s: the probe's counters are unreadable at %s" % (name, phys))
        # None is ruled out just above.
        seqs, kseqs = cast(List[int], vals), cast(List[int], kvals)
        if not cut:
            say("%s: snapshot %d fell between two vDSO calls: again" % (name, t + 1), tag)
            time.sleep(0.3 + 0.1 * t)
            continue
        said = src.ask(wire.SEQ, wire.parse_seq)
        # A wrong address would read another value: one above what the
        # probe counts, 0 for a consumer that has run, or far below.
        if any(not v <= s < v + 8 * RING or (s and not v) for v, s in zip(seqs, said)):
            raise fleet.GuestError("%s: counters read at the snapshot %s, the probe says %s after it"
                                   % (name, vals, said))
        return path, up, seqs + kseqs
    raise fleet.GuestError("%s: no snapshot inside a vDSO call after %d tries" % (name, tries))


def dump(fl: fleet.Fleet, name: str, path: str, seqs: Sequence[int], kaddrs: Sequence[str],
         guid: Optional[str], m: int, run: float, streams: Sequence[int], counter: Optional[bool] = None) -> Outs:
    """Restore one clone, let its consumers run for run s, fetch the
    outputs of streams (the others are left empty). counter: whether the
    VMM bumps vmclock's counter in it (fleet.Fleet.clone)."""
    c = fl.clone(name, path, guid, counter=counter)
    try:
        # Without in-kernel consumers, ask the probe how far its own have
        # got (the request draws no randomness): a clone's first moments
        # under TCG can pass before they run at all, and a lone vDSO loop
        # laps its ring (1M outputs) in well under a second.
        t0 = time.monotonic()
        while not kaddrs:
            got = [x - seqs[k] for k, x in enumerate(c.ask(wire.SEQ, wire.parse_seq, 3))
                   if k in streams]
            if min(got) >= m * 8:
                break
            # Starved: a dump now would compare fewer outputs than asked.
            if time.monotonic() - t0 >= STARVED:
                raise fleet.GuestError("%s: consumers drew %s of %d outputs in %d s" %
                                       (name, got, m * 8, STARVED))
            time.sleep(0.005)
        # Stop after run s, but never so late that a consumer laps its ring
        # (1M slots: in-kernel get_random_u32() draws ~2M/s on a fast host,
        # and the outputs to compare would be overwritten), nor so early
        # that an in-kernel consumer still waiting for its vCPU on a loaded
        # host has drawn nothing (bounded).
        t0 = time.monotonic()
        while kaddrs:
            drawn = [(peek(c, "xp /1gx " + a) or 0) - s for a, s in zip(kaddrs, seqs[3:])]
            t = time.monotonic() - t0
            if max(drawn) >= KRING // 2 or t >= STARVED or (t >= run and min(drawn) >= MIN_OUTPUTS):
                break
            time.sleep(0.02)
        c.send(wire.STOP)
        c.readline()
        outs: Outs = [[] for _ in IFACES]
        for k in streams:
            s = seqs[k]
            # Output s may predate the snapshot. vDSO outputs come ~10x faster.
            n = m * (8 if IFACES[k] == "vdso" else 1)
            c.send(wire.dump(k, s + 1, n))
            line = c.readline(60)
            try:
                vals = wire.parse_dump(line, n)
            except wire.GuestError:
                vals = []
            real = sum(not v.startswith("-") for v in vals)
            if len(vals) != n or real < min(MIN_OUTPUTS, n):
                raise fleet.GuestError("%s: %s dump has %d of %d outputs, %d after the snapshot: "
                                      "nothing to compare (%r)" % (name, IFACES[k], len(vals), n,
                                                                   real, line[:60]))
            outs[k] = vals
        return outs
    finally:
        c.quit()


def compare(x: Outs, y: Outs) -> List[Counts]:
    """(outputs of x also produced anywhere in y, longest run of them,
    outputs of x compared: the real ones, not the dump's size), per interface.

    Matched as a set over all of y's interfaces: after a restore the
    scheduler may hand one crng stream to different consumers in each clone,
    and a value both clones hold is repeated whoever read it.
    """
    seen = {v for k, iface in enumerate(y) if not NARROW[k]
            for v in iface if not v.startswith("-")}
    out = []
    for k, outs in enumerate(x):
        same = run = best = 0
        for i, v in enumerate(outs):
            near = y[k][max(0, i - WINDOW):i + WINDOW + 1] if NARROW[k] else seen
            if v.startswith("-") or v not in near:
                run = 0
                continue
            same += 1
            run += 1
            best = max(best, run)
        out.append((same, best, sum(not v.startswith("-") for v in outs)))
    return out


def worst(results: List[Counts]) -> Counts:
    """Of compare() results, the one that repeated most (then the longest run)."""
    return max(results, key=lambda r: (r[0], r[1]))


def record(res: Table, col: str, streams: Sequence[int], a: Outs, b: Outs, nofork: List[Outs],
           view: Callable[[Outs], Outs] = lambda o: o) -> None:
    """Into res[col], per stream, the pair a, b compared (view of each
    against the other, the worse way round); with nofork (the snapshot's
    same-GUID clones), each of a and b against them, into the matching
    "clone" column. view: what of a clone is judged (vdso-call: the cut call)."""
    ab, ba = compare(view(a), b), compare(view(b), a)
    for k in streams:
        res[col][IFACES[k]].append(max(ab[k], ba[k]))
    for x in (a, b) if nofork else ():
        vs = [compare(view(x), y) for y in nofork]
        for k in streams:
            res[col.replace("fresh", "clone")][IFACES[k]].append(worst([v[k] for v in vs]))


def bench(s: qemu.Settings, kernel: str, npairs: int, control: int, late: float, m: int, run: float = 0.1,
          profile: str = "busy", append: str = "", early: float = EARLY,
          devices: str = "vmgenid", tag: str = TAG) -> Tuple[Table, List[str]]:
    """{column: {iface: [(same, run, compared) per pair or clone]}} and the snapshot notes.

    Columns: "fresh" compares the two clones of each fresh pair, "control"
    those of each same-GUID pair, and "clone" each fresh clone with the
    same-GUID clones of its own snapshot, the stream it continues if it
    missed its fork: a clone that missed repeats it whatever its sibling did.
    With profile vdso-call, "fresh-cut" and "clone-cut" are the same on the
    outputs of the call the snapshot cut alone (CUT_CALL).

    npairs fresh-GUID pairs, split between a snapshot at uptime EARLY and
    one at uptime late (0: none); control same-GUID pairs per snapshot;
    m outputs compared per interface (vDSO 8x); clones run run s after
    the resume before their consumers stop; profile: a key of PROFILES;
    append: more kernel command line for the source; devices: the
    generation devices (qemu.DEVICES): a fresh clone gets a new GUID and,
    with vmclock, the counter bumped; a control neither.
    """
    mode, streams = PROFILES[profile]
    ifaces = [IFACES[k] for k in streams]
    res: Table = {col: {i: [] for i in ifaces} for col in ("fresh", "control", "clone", "fresh-cut", "clone-cut")}
    # The cut call's outputs of a clone, where there is one.
    cut = (lambda o: [v[:CUT_CALL] for v in o]) if profile == "vdso-call" else None
    notes: List[str] = []
    with fleet.Fleet(s, obj=obj(s, kernel), tag="bench-" + kernel, devices=devices) as fl:
        src = fl.boot("src", serve=mode, ready=wire.PROBE_READY, append=append)
        line = src.wait_console(wire.PROBE_READY + r" .*").group(0)
        try:
            ready = wire.parse_probe_ready(line)
        except wire.GuestError as e:
            raise fleet.GuestError("%s: %s" % (kernel, e))
        phys = ready.phys
        if "0" in ready.phys + (ready.incall,):
            raise fleet.GuestError("%s: the probe found no physical address for a counter: %s"
                                   % (kernel, ready.line))
        if 3 in streams and not ready.kernel:
            raise fleet.GuestError("%s: the in-kernel probe (rngprobe.ko) did not start" % kernel)
        if 2 in streams and not ready.vdso:
            raise fleet.GuestError("%s: the probe found no vDSO getrandom()" % kernel)
        kaddrs = ready.kphys if 3 in streams else ()
        guid0 = src.guid() if "vmgenid" in qemu.DEVICES[devices] else None
        plan = [("early", early, npairs - npairs // 2 if late else npairs)]
        if late and profile.startswith("vdso"):
            plan = [("late", late, npairs)]  # the crng reseeds itself often early on
        elif late:
            plan.append(("late", late, npairs // 2))
        for label, uptime, pairs in plan:
            last = time.monotonic()
            while float(src.request_value(wire.UPTIME, "UPTIME")) < uptime:
                if time.monotonic() - last >= 30:
                    say("%s: waiting for uptime %.0f s before the %s snapshot" % (kernel, uptime, label), tag)
                    last = time.monotonic()
                time.sleep(1)
            path, up, seqs = snapshot(fl, src, phys, kaddrs, kernel + "-" + label, tries=10,
                                      inside=ready.incall if profile == "vdso-call" else None, tag=tag)
            if label == plan[-1][0]:
                src.quit()
            notes.append("%s %s snapshot at uptime %.1fs, outputs so far %s" %
                         (kernel, label, up, "/".join(str(s) for s in seqs)))
            say(notes[-1], tag)
            last = time.monotonic()
            # The controls first: each fresh clone is then compared with them.
            nofork: List[Outs] = []
            for col, n, guid in (("control", control, guid0), ("fresh", pairs, "auto")):
                for p in range(n):
                    if time.monotonic() - last >= 30:  # a line at least every 30 s
                        say("%s %s: %s pair %d of %d" % (kernel, label, col, p + 1, n), tag)
                        last = time.monotonic()
                    a, b = (dump(fl, "%s-%s%d%s" % (label, col, p, x), path, seqs, kaddrs,
                                 guid, m, run, streams, counter=fl.vmclock and col == "fresh")
                            for x in "ab")
                    if col == "control":
                        record(res, "control", streams, a, b, [])
                        nofork += [a, b]
                        continue
                    record(res, "fresh", streams, a, b, nofork)
                    if cut:
                        record(res, "fresh-cut", streams, a, b, nofork, cut)
            os.unlink(path)
            say("%s %s: %d fresh + %d control pairs done" % (kernel, label, pairs, control), tag)
            # The same numbers for this snapshot alone: the control depends on uptime.
            notes.append("    " + "; ".join(
                "%s %s" % ("new GUID" if col == "fresh" else "same GUID", ", ".join(
                    "%s %s" % (iface, cell(res[col][iface][-n:] if n else []))
                    for iface in ifaces))
                for col, n in (("fresh", pairs), ("control", control))))
    return res, notes



def cell(pairs: Sequence[Counts], what: str = "pairs") -> str:
    if not pairs:
        return "-"
    hit = [p for p in pairs if p[0]]
    best = max(pairs, key=lambda p: p[1])
    # A run as long as the dump means the window outlasted what was compared.
    return "%d/%d %s, max run %s%d" % (len(hit), len(pairs), what,
                                         ">=" if best[1] == best[2] else "", best[1])
