"""harness/vmtest: one command per QEMU test or benchmark.

Tests report one result per check (harness/machinery/result.py: 'PASS name',
'FAIL name: why', 'ERROR name: why' where the harness could not judge)
and exit non-zero if any did not pass; benchmarks print tables. Every guest runs in QEMU
(KVM if a short probe boot works, else TCG; each run says which).
"""
import argparse
import importlib
import os
import re
import sys
from typing import Optional, Sequence

from . import fleet, qemu, result

# name, module, what it does
COMMANDS = (
    ("boot", "boot", "boot a kernel, run guest tests (tests/guest/NAME.sh)"),
    ("guest", "profiles", "boot one of the guest profiles declared in harness/suites/profiles.py"),
    ("kunit", "kunit", "the series' KUnit suite on User-Mode Linux (build/uml-kunit)"),
    ("firmware", "firmware", "malformed VM_Gen_Counter firmware and IDs in odd memory"),
    ("fork-demo", "demo", "fork a guest: two clones and a same-GUID control"),
    ("vmclock-counter", "vmclock_gen", "vmclock's generation counter across forks, written as the VMM"),
    ("vmclock-unpriv", "vmclock_unpriv", "uid 65534 spins on vmclock's mapped counter across a fork"),
    ("vmclock-hold", "vmclock_hold", "an open /dev/vmclock0 across an unbind of the device"),
    ("fork", "fork", "fresh-GUID clones, same-GUID controls, clones of clones"),
    ("fork-events", "fork_events", "poll() on fork_events across restores"),
    ("fork-count-cases", "fork_count", "fork_events per case: counter, GUID, both, neither"),
    ("storm", "storm", "a chain of forks under load, watched by a poller"),
    ("concurrency", "concurrency", "forks under full RNG and WireGuard load"),
    ("window", "window", "the race window, stock vs patched, busy consumers"),
    ("long-read", "long_read", "long reads cut by a snapshot"),
    ("early-crng", "early_crng", "a fork before the crng is ready"),
    ("rebind", "rebind", "unbind/rebind (or reload) vmgenid across forks"),
    ("bench-fork", "bench_fork", "duplicated outputs across clones, stock vs patched"),
    ("bench-rng", "bench_rng", "RNG throughput, patched/stock ratios"),
    ("test", "machinery.pipeline", "make test: every phase of the pipeline, in order"),
)
def environment() -> str:
    """The variables the harness reads, as the README's Environment table
    (their one description) says."""
    try:
        with open(os.path.join(qemu.TOP, "README.md")) as f:
            table = f.read().split("\n## Environment\n", 1)[1].split("\n## ", 1)[0]
    except (OSError, IndexError):
        return ""
    rows = re.findall(r"^\| (`[^|]+`) \| ([^|]+) \| (.+) \|$", table, re.M)
    return "environment (README.md, Environment; make passes them through):\n" + "".join(
        "  %s: %s\n" % (names.replace("`", ""), re.sub(r"\[([^]]*)\]", r"(default \1)", what.replace("`", "")))
        for names, who, what in rows if "harness" in who or "bench-rng" in who)


ERRORS = (fleet.GuestError, TimeoutError, ConnectionError, RuntimeError, OSError)


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--obj", default=qemu.default_obj(),
                        help="the kernel build to boot (default: env VMFORK_OBJ, "
                        "which make test-debug sets, else build/obj)")
    common.add_argument("--accel", choices=("kvm", "tcg"),
                        help="skip the KVM probe (default: probe once, cached in build/accel)")
    common.add_argument("--keep-logs", action="store_true",
                        help="keep the fork guests' console logs in build/fork/ even on success")
    ap = argparse.ArgumentParser(prog="harness/vmtest", description=__doc__, epilog=environment(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for name, module, what in COMMANDS:
        m = importlib.import_module(module if "." in module else "suites." + module)
        # A command that picks its own kernels (the runner, bench-rng) takes no --obj.
        own = getattr(m, "OWN_KERNELS", False)
        p = sub.add_parser(name, help=what, parents=[] if own else [common], description=m.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if hasattr(m, "add_args"):
            m.add_args(p)
        p.set_defaults(command=m)
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = parser().parse_args(argv)
    s = qemu.Settings(getattr(a, "obj", None) or qemu.default_obj(), getattr(a, "accel", None),
                      getattr(a, "keep_logs", False))
    try:
        out = a.command.main(a, s)
        # A test returns its results (one printer: result.report()); a
        # benchmark or the runner its exit status.
        if out is None or isinstance(out, int):
            return out or 0
        return result.report(out)
    except ERRORS as e:
        # A benchmark's error is not a test result.
        # A command whose tests are named by its options has test_name(a);
        # one that is a benchmark for some options BENCHMARK(a).
        m = a.command
        name = m.test_name(a) if hasattr(m, "test_name") else getattr(m, "NAME", a.cmd)
        bench = getattr(m, "BENCHMARK", False)
        if bench(a) if callable(bench) else bench:
            print("%s: error: %s" % (name, e), file=sys.stderr)
            return 1
        # A guest that misbehaved, or whose QEMU exited under a command (a
        # panic ends QEMU here: -no-reboot), may be the kernel's fault:
        # FAIL. A QEMU that never came up or stopped answering, a missing
        # file or tool is the harness's: ERROR.
        if isinstance(e, (fleet.GuestError, ConnectionError)):
            return result.report([result.verdict(name, False, str(e))])
        return result.report([result.error(name, "%s: %s" % (type(e).__name__, e))])
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
