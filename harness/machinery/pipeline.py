"""make test: run every phase of PHASES in order and end with
'N passed, N failed'.

Each phase is one command. Its results reach the runner through one
channel, the result file the runner names in VMFORK_RESULTS
(harness/machinery/result.py, scripts/lib/result.sh), never by reading its output back;
its result lines and progress lines in brackets are shown as they come.
Everything a phase printed, its results, its exit status and a one-line
summary are kept in build/results/PHASE/{log,results,rc,summary} (make
test-debug: build/results-debug/), every result of the run, named
PHASE/NAME, in build/results/results: a failed run can be read after the
fact, and the final line is the sum of the summaries. A phase that exits
non-zero without a failed result, that reports a SKIP (every phase runs
where its feature must exist) or an ERROR, that reports one name twice,
or whose printed results and recorded ones differ in number (a result
printed past report()) counts as a failure.
"""
import argparse
import dataclasses
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Tuple

from . import qemu, result
from .result import Result

OWN_KERNELS = True  # each phase picks its kernel: harness/vmtest test takes no --obj

# The pipeline, declared once: tests/run-debug, the README's phase table
# and tests/unit are checked against it. Flags: '&' runs in the
# background lane beside the phases up to the next join (host-only work
# that takes neither the kernel build lock nor QEMU, or a guest that
# times nothing); 'd' also runs in make test-debug, 'D' only there.
# 'S' marks make test-stable's phases, run there only; 'R' make
# test-revert's (a part of make test). Limit: see LIMIT.
# name, flags, command[, limit]
_TABLE: Tuple[Tuple[Any, ...], ...] = (
    ("unit", "", "tests/unit"),
    ("setup", "", "scripts/deps", 1800),
    ("lint", "", "tests/lint"),
    ("tree", "", "scripts/mktree", 1200),
    ("build", "", "scripts/build", 2400),
    # The series with its checks compiled out: two files differ from build,
    # so ccache builds it in a minute or two.
    ("build-revert", "dR", "scripts/build revert", 2400),
    ("build-kunit", "", "scripts/build kunit", 1200),
    ("build-stock", "", "scripts/build stock", 2400),
    ("build-arm64", "", "scripts/build arm64", 1200),
    ("initramfs", "d", "scripts/mkinitramfs", 1200),
    ("workspace", "&", "tests/host/workspace"),
    ("targets", "&", "tests/host/targets"),
    ("send", "&", "tests/host/send"),
    ("gates", "", "checks/run --touched", 2400),
    ("gate-fixtures", "", "tests/host/gate-fixtures --touched", 1200),
    ("join", "", ""),
    ("smoke", "d", "harness/vmtest guest smoke"),
    # The base kernel's vDSO selftests: a minute of one vCPU's work
    # (vdso_test_chacha under TCG), beside guests that time nothing.
    ("vdso-selftests", "&d", "harness/vmtest guest vdso-selftests"),
    ("kselftest-stock", "", "harness/vmtest guest kselftest-stock"),
    ("vmclock", "", "harness/vmtest guest vmclock"),
    ("vmclock-absent", "", "harness/vmtest guest vmclock-absent"),
    ("vmclock-counter", "", "harness/vmtest vmclock-counter"),
    ("vmclock-unpriv", "", "harness/vmtest vmclock-unpriv"),
    # The base kernel's read() after the unbind faults: the control.
    ("vmclock-hold", "d", "harness/vmtest vmclock-hold"),
    ("vmclock-hold-stock", "", "harness/vmtest vmclock-hold --kernel stock"),
    # On its own UML kernel (build-kunit): every kernel booted in QEMU is
    # configured as shipped, without KUnit.
    ("kunit", "", "harness/vmtest kunit"),
    ("firmware", "d", "harness/vmtest firmware"),
    ("join", "", ""),
    ("fork-demo", "", "harness/vmtest fork-demo --deep-path"),
    ("fork", "d", "harness/vmtest fork"),
    # Stock must fail what the fork phase claims of the series.
    ("fork-stock", "", "harness/vmtest fork --kernel stock"),
    ("fork-events", "d", "harness/vmtest fork-events"),
    # Without a notification: fork_events moves at the RNG's next use.
    ("fork-events-vmclock", "", "harness/vmtest fork-events --devices vmclock"),
    ("fork-count-cases", "", "harness/vmtest fork-count-cases"),
    ("storm", "d", "harness/vmtest storm"),
    ("concurrency", "d", "harness/vmtest concurrency"),
    ("window", "", "harness/vmtest window", 1500),
    # vmclock alone: the stock kernel's RNG ignores its counter and must
    # repeat on every interface; the patched kernel acts on the counter.
    ("window-vmclock", "", "harness/vmtest window --devices vmclock", 1500),
    # The vDSO compares vmclock's counter: Firecracker's setup, both.
    ("vdso-only", "", "harness/vmtest window --vdso-only --devices both", 1500),
    ("vdso-call", "", "harness/vmtest window --vdso-call --devices both", 1500),
    # Without the counter the vDSO's own check cannot act: the patched
    # kernel's vDSO-only clones must repeat, as stock's do.
    ("vdso-only-vmgenid", "", "harness/vmtest window --vdso-only --devices vmgenid --kernel patched", 1500),
    ("vdso-call-vmgenid", "", "harness/vmtest window --vdso-call --devices vmgenid --kernel patched", 1500),
    ("window-revert", "dR", "harness/vmtest window --kernel revert", 1500),
    ("long-read", "d", "harness/vmtest long-read"),
    # The stock window of the two phases above, in the same run.
    ("long-read-stock", "", "harness/vmtest long-read --kernel stock"),
    # vmclock alone (no notification: the counter is what the RNG sees),
    # stock beside it; and both devices, Firecracker's setup.
    ("long-read-vmclock", "", "harness/vmtest long-read --devices vmclock"),
    ("long-read-stock-vmclock", "", "harness/vmtest long-read --kernel stock --devices vmclock"),
    ("long-read-both", "", "harness/vmtest long-read --devices both"),
    ("long-read-revert", "dR", "harness/vmtest long-read --kernel revert"),
    ("early-crng", "d", "harness/vmtest early-crng"),
    ("early-crng-stock", "", "harness/vmtest early-crng --kernel stock"),
    ("early-crng-vmclock", "", "harness/vmtest early-crng --devices vmclock"),
    ("early-crng-stock-vmclock", "", "harness/vmtest early-crng --kernel stock --devices vmclock"),
    ("early-crng-both", "", "harness/vmtest early-crng --devices both"),
    ("rebind", "d", "harness/vmtest rebind"),
    ("rebind-stock", "", "harness/vmtest rebind --kernel stock"),
    ("nowatch", "d", "harness/vmtest rebind --no-watch"),
    # Needs vmgenid as a module: make test-debug's kernel.
    ("reload", "D", "harness/vmtest rebind --module"),
    # make test-stable ('S' only): the fixes series backported to the
    # previous Debian base, that base as shipped beside it.
    ("stable-tree", "S", "scripts/stabletree", 1200),
    ("stable-build-stock", "S", "scripts/build stable-stock", 2400),
    ("stable-build", "S", "scripts/build stable", 2400),
    ("rebind-stable-stock", "S", "harness/vmtest rebind --kernel stable-stock"),
    ("rebind-stable", "S", "harness/vmtest rebind --kernel stable"),
    ("early-crng-stable-stock", "S", "harness/vmtest early-crng --kernel stable-stock"),
    ("early-crng-stable", "S", "harness/vmtest early-crng --kernel stable"),
)
# Every phase ends within its limit, or is killed and fails: a hung guest
# or tool never holds CI until its own 90 minutes run out. Seconds, on 2
# cores from cold (a full kernel compile is 14-19 minutes); make
# test-debug's kernels are three times slower. A phase's own is the
# table's fourth column.
LIMIT = 900


class Phase(NamedTuple):
    name: str
    flags: str
    cmd: str
    limit: int = 0  # seconds; 0: LIMIT


PHASES = tuple(Phase(*p) for p in _TABLE)
SHOWN = re.compile(r"%s|^\[|error" % result.PRINTED.pattern)
HEARTBEAT = 30


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--only", default=os.environ.get("ONLY", ""), metavar="'PHASE ...'",
                   help="run these phases only, in the table's order (env ONLY)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--debug", action="store_true",
                   help="the phases for make test-debug's kernel (flags d and D)")
    g.add_argument("--stable", action="store_true",
                   help="make test-stable's phases (flag S): the fixes on the previous base")
    g.add_argument("--revert", action="store_true",
                   help="make test-revert's phases (flag R): the series with its checks compiled out")


def suite(flags: str, debug: bool = False, stable: bool = False, revert: bool = False) -> bool:
    """Whether a phase with these flags is in make test (no option),
    make test-debug, make test-stable or make test-revert."""
    if revert:
        return "R" in flags
    if stable:
        return "S" in flags
    if debug:
        return bool(set(flags) & set("dD"))
    return not set(flags) & set("DS")


def selected(only: str = "", debug: bool = False, stable: bool = False, revert: bool = False) -> List[Phase]:
    """The phases to run, in order, joins kept."""
    names = only.split()
    unknown = set(names) - {p.name for p in PHASES if p.name != "join"}
    if unknown:
        raise ValueError("no such phase: %s (harness/machinery/pipeline.py lists them)"
                         % " ".join(sorted(unknown)))
    return [p for p in PHASES if p.name == "join" or (
        p.name in names if names else suite(p.flags, debug, stable, revert))]


def _feed(stream: Iterable[str], lines: "queue.Queue[Optional[str]]") -> None:
    """A phase's output, line by line, then None at its end."""
    for line in stream:
        lines.put(line)
    lines.put(None)


class Runner:
    def __init__(self, results: str, slow: int = 1) -> None:
        self.results, self.slow = results, slow
        self.lock = threading.Lock()
        self.counts: Dict[str, Tuple[int, int]] = {}  # phase: (passed, failed), as its summary says
        self.all: List[Result] = []  # every phase's results, named PHASE/NAME

    def say(self, line: str, buf: Optional[List[str]] = None) -> None:
        if buf is not None:
            buf.append(line)
            return
        with self.lock:
            print(line, flush=True)

    def lane(self, todo: List[Phase], buf: List[str]) -> None:
        """The background lane's phases, one after another."""
        for p in todo:
            try:
                self.phase(p.name, p.cmd, buf, p.limit)
            except Exception as e:  # counted at the end: it left no summary
                self.say("[phase %s: the runner failed: %s]" % (p.name, e), buf)

    def phase(self, name: str, cmd: str, buf: Optional[List[str]] = None, limit: int = 0) -> None:
        """Run one phase; its lines go to stdout, or to buf (the lane)."""
        d = os.path.join(self.results, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        t0 = time.monotonic()
        lines: "queue.Queue[Optional[str]]" = queue.Queue()
        # When a line or a heartbeat was last shown, and the phase's last line.
        said_at, last_line = time.monotonic(), ""
        rfile = os.path.join(d, "results")
        with open(os.path.join(d, "log"), "w") as log:
            try:
                p = subprocess.Popen(cmd.split(), cwd=qemu.TOP, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace",
                                     start_new_session=True, env=dict(os.environ, **{result.ENV: rfile}))
            except OSError as e:
                p = None
                log.write("%s\n" % e)
            if p:
                threading.Thread(target=_feed, args=(p.stdout, lines), daemon=True).start()
            limit = (limit or LIMIT) * self.slow
            killed = 0.0  # when it was killed (time.monotonic()); 0: not
            while p:
                if not killed and time.monotonic() - t0 > limit:
                    os.killpg(p.pid, signal.SIGKILL)  # its QEMUs too: one process group
                    killed = time.monotonic()
                # Something that left the group may hold the pipe: not for long.
                if killed and p.poll() is not None and time.monotonic() - killed > 10:
                    break
                try:
                    line = lines.get(timeout=2)
                except queue.Empty:
                    line = ""
                if line is None:
                    break
                if line:
                    log.write(line)
                    log.flush()
                    last_line = line.rstrip()
                    if SHOWN.search(line):
                        self.say(line.rstrip(), buf)
                        said_at = time.monotonic()
                if buf is None and time.monotonic() - said_at >= HEARTBEAT:
                    self.say("[phase %s: %.0fs, running: %s]" % (name, time.monotonic() - t0, last_line[:100]))
                    said_at = time.monotonic()
            rc = p.wait() if p else 127
        with open(os.path.join(d, "log"), errors="replace") as f:
            text = f.read()
        res = result.load(rfile)
        extra, shown = judge(name, cmd, rc if p else None, killed and limit, res, result.printed(text))
        if rc and p and not killed and all(r.ok for r in res):
            shown = ["    " + l for l in text.splitlines()[-15:]] + shown  # what it said before it failed
        result.write(extra, rfile)
        with open(os.path.join(d, "log"), "a") as log:
            log.writelines(l + "\n" for l in shown)
        for line in shown:
            self.say(line, buf)
        res += extra
        passed = sum(r.status == result.Status.PASS for r in res)
        failed = sum(r.status in (result.Status.FAIL, result.Status.ERROR) for r in res)
        secs = time.monotonic() - t0
        with open(os.path.join(d, "rc"), "w") as f:
            f.write("%d\n" % rc)
        with open(os.path.join(d, "summary"), "w") as f:
            f.write("%s: %d passed, %d failed, %.0fs\n" % (name, passed, failed, secs))
        self.counts[name] = passed, failed
        self.all += [dataclasses.replace(r, path=(name,) + r.path) for r in res]
        self.say("[phase %s: %.0fs]" % (name, secs), buf)


def judge(name: str, cmd: str, rc: Optional[int], killed: float, res: List[Result], printed: int
          ) -> Tuple[List[Result], List[str]]:
    """The runner's own results for a phase that exited rc (None: it never
    started), was killed after killed seconds (or not: 0), recorded res and
    printed that many result lines; and the lines that show them."""
    n = {s: sum(r.status == s for r in res) for s in result.Status}
    extra: List[Result] = []
    if killed:
        extra.append(result.verdict(name, False, "killed after its limit of %ds (pipeline.PHASES)" % killed))
    if n[result.Status.SKIP]:
        extra.append(result.verdict(name, False, "%d test(s) skipped where the feature must exist"
                                    % n[result.Status.SKIP]))
    dup = result.duplicates(res)
    if dup:
        extra.append(result.error(name + "-names", "reported twice: " + " ".join(dup[:5])))
    if printed != len(res):
        extra.append(result.error(name + "-channel", "%d result line(s) printed, %d recorded in its "
                                  "result file (harness/machinery/result.py)" % (printed, len(res))))
    if rc is None:
        extra.append(result.error(name, "%s does not exist" % cmd.split()[0]))
    elif rc and not killed and not any(r.status != result.Status.PASS for r in res + extra):
        extra.append(result.verdict(name, False, "exit status %d" % rc))
    elif not rc and not res and not extra:
        extra.append(result.verdict(name, True))
    return extra, [r.line() for r in extra]


def main(a: argparse.Namespace, s: qemu.Settings) -> int:
    t0 = int(os.environ.get("T0", time.time()))
    try:
        phases = selected(a.only, a.debug, a.stable, a.revert)
    except ValueError as e:
        print("test: %s" % e, file=sys.stderr)
        return 2
    # make test-debug's and test-stable's results stay beside make test's.
    results = os.path.join(qemu.BUILD, "results" + ("-debug" if a.debug else "-stable" if a.stable else ""))
    # make test-revert's are a part of make test's, as --only's are.
    if not a.only and not a.revert:
        shutil.rmtree(results, ignore_errors=True)
    os.makedirs(results, exist_ok=True)
    run = Runner(results, 3 if a.debug else 1)
    queued: List[Phase] = []  # '&' phases not yet started
    lane: Optional[Tuple[threading.Thread, List[str], str]] = None  # (its thread, its lines, names)

    def join() -> None:
        nonlocal lane, queued
        for p in queued:  # nothing ran in the foreground beside them
            run.phase(p.name, p.cmd, None, p.limit)
        queued = []
        if lane:
            thread, buf, names = lane
            waited = time.monotonic()
            while thread.is_alive():
                thread.join(HEARTBEAT)
                if thread.is_alive():
                    run.say("[join: %.0fs waiting for %s]" % (time.monotonic() - waited, names))
            for line in buf:
                run.say(line)
            lane = None

    for p in phases + [Phase("join", "", "")]:
        if p.name == "join":
            join()
        elif "&" in p.flags:
            queued.append(p)
        else:
            if queued and not lane:
                names = " ".join(q.name for q in queued)
                run.say("[background: %s, beside the phases up to the next join]" % names)
                buf: List[str] = []
                todo = list(queued)
                thread = threading.Thread(target=run.lane, args=(todo, buf))
                thread.start()
                lane, queued = (thread, buf, names), []
            run.phase(p.name, p.cmd, None, p.limit)
    passed = failed = 0
    for name in [p.name for p in phases if p.name != "join"]:
        if name not in run.counts:
            # The runner itself failed there (a full disk, say): never a silent pass.
            r = result.error(name, "the phase left no summary in %s" % os.path.join(results, name))
            print(r.line())
            run.all.append(r)
            failed += 1
            continue
        passed, failed = passed + run.counts[name][0], failed + run.counts[name][1]
    with open(os.path.join(results, "results"), "w") as f:
        f.writelines(r.record() for r in run.all)
    errors = sum(r.status == result.Status.ERROR for r in run.all)
    if errors:
        print("[%d of the failures are ERRORs: the harness or a tool could not judge]" % errors)
    summary = "%d passed, %d failed" % (passed, failed)
    with open(os.path.join(results, "summary"), "w") as f:
        f.write(summary + "\n")
    print("[total: %ds]" % (time.time() - t0))
    print(summary)
    sys.stdout.flush()
    return 1 if failed else 0
