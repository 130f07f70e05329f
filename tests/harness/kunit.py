"""The series' KUnit suite (random_vmfork): what the RNG counts as a VM
fork. vmfork_update() touches only its arguments, so the suite runs where
the kernel's own kunit.py runs suites by default: a User-Mode Linux
kernel (scripts/build-kunit, build/uml-kunit), which halts once the suite
is done. The kernels that boot and fork in QEMU are configured as shipped,
without KUnit. Every case in CASES must run and pass, no more and no
fewer; a SKIP fails, since the feature exists on the patched kernel.
"""
import os

from . import console, qemu

SUITE = "random_vmfork"
# Pinned: a case dropped or renamed in the series fails here, not silently.
CASES = ("vmfork_neither_changes", "vmfork_both_change", "vmfork_counter_changes",
         "vmfork_id_changes", "vmfork_second_report", "vmfork_id_after_counter_alone")


# The KUnit kernel: UML, built from the series' tip by scripts/build-kunit.
OBJ = os.path.join(qemu.BUILD, "uml-kunit")


def add_args(p):
    p.add_argument("--parse", metavar="LOG", help="judge a captured console log, no boot")


def cases(log, parse_only=False, timeout=300):
    """Run the UML kernel (unless parse_only) and return (finished, the suite or None)."""
    ok = True
    if not parse_only:
        if not os.path.exists(os.path.join(OBJ, "linux")):
            raise RuntimeError("no %s/linux: run scripts/build-kunit" % OBJ)
        ok, text = qemu.uml(OBJ, ["mem=64M", "kunit.enable=1", "kunit_shutdown=halt"], log, timeout)
        ok = ok and not console.splats(text)
    return ok, console.parse(console.read(log)).find(SUITE)


def judge(label, ok, suite, log):
    """(PASS/FAIL lines, failed) for one boot's suite."""
    if not ok:
        return ["FAIL kunit-%s: the kernel did not finish cleanly (exit, timeout or a splat); log %s" % (label, log)], True
    if suite is None:
        return ["FAIL kunit-%s: suite %s did not run (CONFIG_RANDOM_VMFORK_KUNIT_TEST?); log %s"
                % (label, SUITE, log)], True
    lines, bad = [], False
    got = [t.name for t in suite.subtests]
    if tuple(got) != CASES:
        lines.append("FAIL kunit-%s-cases: ran %s, want %s; log %s" % (label, got, list(CASES), log))
        bad = True
    for t in suite.subtests:
        if t.status == "PASS":
            lines.append("PASS kunit-%s-%s" % (label, t.name))
        else:
            lines.append("FAIL kunit-%s-%s: %s %s; see %s" % (label, t.name, t.status, t.detail, log))
            bad = True
    for e in suite.errors:
        lines.append("FAIL kunit-%s: %s (crash or hang mid-suite?); log %s" % (label, e, log))
        bad = True
    if not bad and suite.status != "PASS":
        lines.append("FAIL kunit-%s: the suite's result is %s; log %s" % (label, suite.status, log))
        bad = True
    return lines, bad


def main(a):
    if a.parse:
        lines, bad = judge("parsed", *cases(a.parse, True), a.parse)
        print("\n".join(lines))
        return 1 if bad else 0
    log = os.path.join(qemu.BUILD, "logs", "kunit-uml.log")
    lines, bad = judge("uml", *cases(log), log)
    print("\n".join(lines), flush=True)
    return 1 if bad else 0
