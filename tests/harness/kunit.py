"""The series' KUnit suite (random_vmfork): what the RNG counts as a VM
fork, a pure function, so it runs the same with or without a generation
device. It is booted without one and with vmgenid and vmclock both bound:
every case in CASES must run and
pass in each, no more and no fewer, and a SKIP fails, since the feature
exists on the patched kernel.
"""
import os

from . import boot, console, qemu

SUITE = "random_vmfork"
# Pinned: a case dropped or renamed in the series fails here, not silently.
CASES = ("vmfork_neither_changes", "vmfork_both_change", "vmfork_counter_changes",
         "vmfork_id_changes", "vmfork_second_report", "vmfork_id_after_counter_alone")


def add_args(p):
    p.add_argument("--parse", metavar="LOG", help="judge a captured console log, no boot")


def cases(log, parse_only=False, append="", **kw):
    """Boot (unless parse_only) and return (finished, the suite or None)."""
    ok = True
    if not parse_only:
        # No guest test: the suite runs at boot, its KTAP on the console.
        ok, _ = boot.run("", log=log, append=("kunit.enable=1 " + append).strip(),
                         show=False, **kw)
    return ok, console.parse(console.read(log)).find(SUITE)


def judge(label, ok, suite, log):
    """(PASS/FAIL lines, failed) for one boot's suite."""
    if not ok:
        return ["FAIL kunit-%s: the guest did not finish; log %s" % (label, log)], True
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
    failed = False
    for label, kw in (("nodevice", {"guid": "none"}), ("devices", {"extra": ("-device", "vmclock")})):
        log = os.path.join(qemu.BUILD, "logs", "kunit-%s.log" % label)
        lines, bad = judge(label, *cases(log, obj=a.obj, **kw), log)
        print("\n".join(lines), flush=True)
        failed |= bad
    return 1 if failed else 0
