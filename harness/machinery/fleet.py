"""Fork a running guest: snapshot it over QMP, restore clones, talk to them.

A fork is "migrate to a file, then start a new QEMU process with -incoming"
(../shared/docs/qemu-vmgenid.md): only a new process writes a new vmgenid
GUID. Every guest here is built by qemu.qemu_argv so source and clones match.
Each guest has its console in a file and its ttyS1 on a unix socket where
the guest's record server (tests/guest/serve/record-server.c) or probe answers.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from types import TracebackType
from typing import Callable, Dict, List, Literal, Optional, Tuple, Type, TypeVar

from . import console, qemu, result, vmclock_page, wire

T = TypeVar("T")
# A record server's answers, {n: (iface, hex)} (Guest.records()).
Records = Dict[int, Tuple[str, str]]


GuestError = wire.GuestError


class Guest:
    """One QEMU process: a freshly booted source or a clone restored from a file."""

    def __init__(self, fleet: "Fleet", name: str, guid: Optional[str] = "auto", snapshot: Optional[str] = None,
                 serve: str = "records", append: str = "", paused: bool = False) -> None:
        self.name, self.fleet = name, fleet
        base = os.path.join(fleet.work, name)
        # Unix socket paths are limited to 107 bytes: sockets live in a short
        # private directory, whatever the depth of the checkout.
        sock = os.path.join(fleet.sockdir, name)
        self.console, self.ttys1, qmp = base + ".console", sock + ".ttyS1", sock + ".qmp"
        self.stderr_path = base + ".stderr"
        incoming = "exec:cat " + snapshot if snapshot else None
        self.argv = qemu.qemu_argv(fleet.kernel, fleet.initrd, ("vmfork.serve=" + serve + " " + append).strip(),
                                 fleet.accel, self.console, guid=guid,
                                 chardevs=[self.ttys1], qmp=qmp, incoming=incoming,
                                 devices=fleet.devices, paused=paused)
        with open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err)
        fleet.guests.append(self)
        self.qmp = qemu.QMP(qmp, timeout=30)
        self.line = wire.Channel(self.ttys1, name, self.proc)
        self.t_start = time.monotonic()
        self._vmclock: Optional[vmclock_page.VmclockPage] = None
        # The vmclock page as QEMU left it before the harness first wrote
        # it: at -S for a source, once the snapshot is loaded for a clone.
        self.page_from_qemu: Optional[vmclock_page.Page] = None

    # -- the guest program's protocols (wire.py) ------------------------------
    def send(self, line: str) -> None:
        self.line.send(line)

    def readline(self, timeout: float = 30) -> str:
        return self.line.readline(timeout)

    def records(self, count: int, timeout: float = 30, request: str = wire.RECORD) -> Records:
        """count records as {n: (iface, hex)}; the requests go out at once.
        request wire.INSECURE: each one getrandom(GRND_INSECURE) call, nothing else."""
        self.send("\n".join([request] * count))
        out: Records = {}
        for _ in range(count):
            n, iface, data = self._answer(wire.parse_record, self.readline(timeout))
            out[n] = (iface, data)
        return out

    def run(self, script: str, timeout: float = 60) -> List[str]:
        """Run /tests/SCRIPT.sh in the guest; return its output lines."""
        self.send(wire.run(script))
        lines: List[str] = []
        while True:
            line = self.readline(timeout)
            if wire.parse_end(line) is not None:
                return lines
            lines.append(line)

    def request_value(self, request: str, key: str, timeout: float = 30) -> str:
        """One request, one "KEY value" answer."""
        self.send(request)
        return self._answer(wire.parse_value, self.readline(timeout), key)

    def ask(self, request: str, parse: Callable[[str], T], timeout: float = 30) -> T:
        """One request, its answer line as parse (of wire.py) reads it."""
        self.send(request)
        return self._answer(parse, self.readline(timeout))

    def _answer(self, parse: Callable[..., T], line: str, *args: str) -> T:
        try:
            return parse(line, *args)
        except GuestError as e:
            raise GuestError("%s: %s" % (self.name, e)) from None

    def value(self, script: str, key: str, timeout: float = 60) -> str:
        for line in self.run(script, timeout):
            if line.startswith(key + " "):
                return line.split(None, 1)[1].strip()
        raise GuestError("%s: '%s' printed no %s line" % (self.name, script, key))

    # -- QEMU side ----------------------------------------------------------
    def wait_console(self, pattern: str, timeout: float = 120) -> re.Match[str]:
        m = qemu.wait_for(self.console, pattern, timeout, self.proc)
        if m is None:
            raise GuestError("%s: no /%s/ on the console within %ds" % (self.name, pattern, timeout))
        return m

    def wait_running(self, timeout: float = 60, before_cont: Optional[Callable[[], None]] = None) -> None:
        """Resume a clone once its state is loaded.

        The source was stopped before its snapshot, so a clone stays paused
        after loading it; "cont" is what starts the fork. before_cont() runs
        once between the two: where a VMM writes what the guest must see first.
        """
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            st = self.qmp.cmd("query-status")["status"]
            if st == "running":
                return
            if st == "paused" and self.qmp.cmd("query-migrate").get("status") == "completed":
                if before_cont:
                    before_cont()
                    before_cont = None
                self.qmp.cmd("cont")
                continue
            if st not in ("inmigrate", "prelaunch", "restore-vm", "paused"):
                raise GuestError("%s: status %s while restoring" % (self.name, st))
            time.sleep(0.05)
        raise GuestError("%s: not running %ds after start" % (self.name, timeout))

    def run_on(self, t: int) -> None:
        """Resume a source after try t's clones' control pair differed, and
        let it run before the next snapshot. Until 30 s of uptime the crng
        reseeds itself every max(1 s, uptime / 2) (crng_reseed_interval()),
        then each minute; a reseed due between a clone's resume and its
        records makes even same-GUID clones differ. So each retry runs on
        longer: the next snapshot lands where reseeds are further apart,
        the third past 30 s (a CI run had three tries at 2, 3 and 4 s of
        uptime all differ when each ran on one second)."""
        self.qmp.cmd("cont")
        time.sleep(RUN_ON[min(t, len(RUN_ON) - 1)])

    def guid(self) -> Optional[str]:
        """The GUID this guest was given; None without a vmgenid device."""
        if "vmgenid" not in qemu.DEVICES[self.fleet.devices]:
            return None
        return self.qmp.cmd("query-vm-generation-id")["guid"]

    def vmclock(self) -> vmclock_page.VmclockPage:
        """This QEMU's vmclock page (found once, on first use)."""
        if self._vmclock is None:
            self._vmclock = vmclock_page.VmclockPage(self.proc.pid, self.qmp)
        return self._vmclock

    def vmclock_loaded(self, counter: bool) -> None:
        """On a clone's load: keep the page as loaded (QEMU's post_load has
        run), then, if counter, write the saved counter + 1, as a VMM does
        on every load (Firecracker: saved + 1, so every clone of one
        snapshot reads the same value)."""
        self.page_from_qemu = self.vmclock().read()
        if counter:
            self.vmclock().set_counter(self.page_from_qemu.counter + 1)

    def snapshot(self, path: str, timeout: float = 60) -> str:
        """Stop the guest, then save it whole into a file; it is left paused.

        Never a live migration: under TCG a running guest's pages can change
        behind the copy, and clones of such a file crash (stock and patched
        alike). A stopped guest is also one exact point of its execution.
        """
        self.qmp.cmd("stop")
        self.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": 4 << 30})
        self.qmp.cmd("migrate", uri="exec:cat > " + path)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            st = self.qmp.cmd("query-migrate").get("status")
            if st == "completed":
                self.fleet.files.append(path)
                return path
            if st in ("failed", "cancelled"):
                raise GuestError("%s: migrate %s" % (self.name, st))
            time.sleep(0.05)
        raise GuestError("%s: migrate not done in %ds" % (self.name, timeout))

    def console_lines(self, text: str) -> List[str]:
        with open(self.console, errors="replace") as f:
            return [line.rstrip() for line in f if text in line]

    def reseed_lines(self, forked: bool = True, text: str = console.RESEED) -> List[str]:
        """This restore's reseed lines (or text's). The kernel logs from a
        worker after it acted on the fork, so a clone can answer before its
        line is out: wait up to 10 s for one after a fork, 2 s where none is
        expected, so that a line counted missing is missing and not late.
        A 0 where none is expected is such a wait run out: never a pass
        alone, only beside a second check (records alike, a count kept)."""
        end = time.monotonic() + (10 if forked else 2)
        while True:
            lines = self.console_lines(text)
            if lines or time.monotonic() >= end:
                return lines
            time.sleep(0.05)

    def quit(self) -> None:
        try:
            self.qmp.cmd("quit")  # lets QEMU flush and remove its sockets
        except Exception:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        qemu.stop(self.proc)
        qmp = getattr(self, "qmp", None)  # absent if QEMU died before QMP came up
        if qmp:
            qmp.sock.close()
        if getattr(self, "line", None):
            self.line.close()

    def describe(self) -> str:
        with open(self.stderr_path, errors="replace") as f:
            err = f.read().strip()
        return ("--- %s: %s\n%s%s" % (self.name, " ".join(self.argv),
                qemu.tail(self.console, 15), ("stderr: " + err + "\n") if err else ""))


# Seconds a source runs on before retry t's snapshot (Guest.run_on).
RUN_ON = (0, 6, 30)


# Callers annotate what they keep (tries: List[X] = retry(...)): mypy 1.0
# infers T as object inside their lambdas otherwise.
def retry(tag: str, tries: int, attempt: Callable[[int], T], settled: Callable[[T], bool],
          show: Callable[[T], str]) -> List[T]:
    """Snapshot until the same-GUID control repeats: the one retry policy.

    Early in boot the crng reseeds itself every few seconds; when that is
    due at the resume, even two clones with the source's GUID differ and the
    try shows nothing. attempt(t) resumes the source if t, snapshots it anew
    and restores its clones; settled(result) says its control held; show(result)
    is its fresh-GUID verdict, logged for every try. All results are
    returned: a repeat between fresh GUIDs in any try is the caller's FAIL,
    whatever later tries say.
    """
    done: List[T] = []
    for t in range(tries):
        done.append(attempt(t))
        ok = settled(done[-1])
        print("[%s] try %d of at most %d: %s; same-GUID control %s" % (
            tag, t + 1, tries, show(done[-1]), "repeated" if ok else "differed"), flush=True)
        if ok:
            break
    return done


class Fleet:
    """Every guest and file of one run, torn down together whatever happens."""

    def __init__(self, s: qemu.Settings, obj: Optional[str] = None, tag: str = "fork", splats: bool = True,
                 devices: str = "vmgenid") -> None:
        """Guests of obj's kernel (default: the run's, s.obj)."""
        if devices not in qemu.DEVICES:
            raise ValueError("devices %r: one of %s" % (devices, ", ".join(qemu.DEVICES)))
        self.kernel, self.initrd, self.accel = qemu.guest_files(s, obj)
        # With vmclock, the harness is its VMM: it writes vm_generation_counter.
        self.devices, self.vmclock = devices, "vmclock" in qemu.DEVICES[devices]
        root = os.path.join(qemu.BUILD, "fork")
        os.makedirs(root, exist_ok=True)
        self.work = tempfile.mkdtemp(prefix=tag + ".", dir=root)
        tmp = os.environ.get("TMPDIR", "/tmp")
        self.sockdir = tempfile.mkdtemp(prefix="vmfork-", dir=tmp if len(tmp) < 48 else "/tmp")
        self.guests: List[Guest] = []
        self.files: List[str] = []
        self.keep = s.keep
        self.splats = splats  # False: a test that expects a splat judges it itself

    def boot(self, name: str, serve: str = "records", ready: str = wire.RECORD_READY,
             timeout: float = 120, append: str = "", counter_start: int = 1, flags: int = 0) -> Guest:
        """A source guest. With vmclock, it starts paused, gets
        vm_generation_counter = counter_start (and flags), then runs; QEMU
        must not have rewritten that by the time the guest is up."""
        g = Guest(self, name, serve=serve, append=append, paused=self.vmclock)
        if self.vmclock:
            g.page_from_qemu = g.vmclock().read()
            written = g.vmclock().set_counter(counter_start, flags)
            g.qmp.cmd("cont")
        g.wait_console(ready, timeout)
        now = g.vmclock().read() if self.vmclock else None
        if now and (now.flags, now.counter) != (written.flags, written.counter):
            raise GuestError("%s: the vmclock page's flags or counter changed by boot: wrote %s, "
                             "now %s" % (name, written, now))
        # Under TCG the kernel moves from tsc-early to the refined tsc ~1.7 s
        # into boot, patching kernel text: a clone of an earlier snapshot
        # does that under running vCPUs, and one such clone oopsed on the
        # patch's int3 (make test, December 2026). Snapshot only after it.
        g.wait_console(r"Switched to clocksource (?!tsc-early)\S+", 30)
        return g

    def clone(self, name: str, snapshot: str, guid: Optional[str] = "auto",
              counter: Optional[bool] = None) -> Guest:
        """A clone of snapshot with guid (auto: a fresh one). counter: write
        vm_generation_counter = saved + 1 before it runs (default: when the
        fleet has vmclock and the clone is a fork, guid auto; a clone of the
        source's generation keeps its counter); False is the same-counter
        control."""
        bump = self.vmclock and guid == "auto" if counter is None else counter
        if bump and not self.vmclock:
            raise ValueError("counter=True needs vmclock, not devices=%s" % self.devices)
        g = Guest(self, name, guid=guid, snapshot=snapshot)
        # Connected before it runs: what the guest prints at once after the
        # resume would be dropped by a server socket without a client.
        g.line.connect()
        g.wait_running(before_cont=(lambda: g.vmclock_loaded(bump)) if self.vmclock else None)
        return g

    def pairs(self, snapshot: str, guid: Optional[str], collect: Callable[[Guest], T],
              suffix: str = "") -> Dict[str, T]:
        """Two clones with fresh GUIDs (and a new counter, with vmclock) and
        two with guid (the source's: the control, with the source's counter),
        one after another: {fresh1, fresh2, same1, same2: collect(clone)}."""
        got: Dict[str, T] = {}
        for name, g in (("fresh1", "auto"), ("fresh2", "auto"), ("same1", guid), ("same2", guid)):
            c = self.clone(name + suffix, snapshot, g)
            got[name] = collect(c)
            c.quit()
        return got

    def snapfile(self, name: str) -> str:
        return os.path.join(self.work, name + ".snap")

    def __enter__(self) -> "Fleet":
        return self

    def __exit__(self, etype: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> Literal[False]:
        if etype is not None and etype is not KeyboardInterrupt:
            print("fork harness failed: %s" % exc, file=sys.stderr)
            for g in self.guests:
                print(g.describe(), file=sys.stderr)
        for g in self.guests:
            g.quit()
        for g in self.guests if self.splats else ():
            bad = console.splats(console.read(g.console))
            if bad:
                result.report([result.verdict(g.name, False, " | ".join(bad[:3]), ("console-clean",))])
                self.keep = True
        for f in self.files:
            if os.path.exists(f):
                os.unlink(f)
        shutil.rmtree(self.sockdir, ignore_errors=True)
        if not self.keep and etype is None:
            shutil.rmtree(self.work, ignore_errors=True)
        elif etype is not None:
            print("fork harness: logs kept in %s" % self.work, file=sys.stderr)
        return False
