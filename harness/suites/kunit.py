"""The series' KUnit suite (random_vmfork): what the RNG counts as a VM
fork. vmfork_update() touches only its arguments, so the suite runs where
the kernel's own kunit.py runs suites by default: a User-Mode Linux
kernel (configs/kernels: kunit), which halts once the suite
is done. The kernels that boot and fork in QEMU are configured as shipped,
without KUnit. Every case in CASES must run and pass, no more and no
fewer; a SKIP fails, since the feature exists on the patched kernel.
"""
import argparse
import os
from typing import List, Optional, Tuple

from machinery import console, kernels, qemu, result
from machinery.result import Result, Status

SUITE = "random_vmfork"
# Pinned: a case dropped or renamed in the series fails here, not silently.
CASES = ("vmfork_neither_changes", "vmfork_both_change", "vmfork_counter_changes",
         "vmfork_id_changes", "vmfork_second_report", "vmfork_id_after_counter_alone")


# The KUnit kernel: UML, the series' tip with its suite (scripts/build kunit).
OBJ = kernels.KERNELS["kunit"].obj(qemu.BUILD)


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--parse", metavar="LOG", help="judge a captured console log, no boot")


def cases(log: str, parse_only: bool = False, timeout: float = 300) -> Tuple[bool, Optional[console.Test]]:
    """Run the UML kernel (unless parse_only) and return (finished, the suite or None)."""
    ok = True
    if not parse_only:
        if not os.path.exists(os.path.join(OBJ, "linux")):
            raise RuntimeError("no %s/linux: run scripts/build kunit" % OBJ)
        ok, text = qemu.uml(OBJ, ["mem=64M", "kunit.enable=1", "kunit_shutdown=halt"], log, timeout)
        ok = ok and not console.splats(text)
    return ok, console.parse(console.read(log)).find(SUITE)


def judge(label: str, ok: bool, suite: Optional[console.Test], log: str) -> List[Result]:
    """The Results of one boot's suite."""
    name = "kunit-" + label
    if not ok:
        return [result.verdict(name, False, "the kernel did not finish cleanly (exit, timeout or a splat); log " + log)]
    if suite is None:
        return [result.verdict(name, False, "suite %s did not run (CONFIG_RANDOM_VMFORK_KUNIT_TEST?); log %s"
                               % (SUITE, log))]
    out: List[Result] = []
    got = [t.name for t in suite.subtests]
    if tuple(got) != CASES:
        out.append(result.verdict(name + "-cases", False, "ran %s, want %s; log %s" % (got, list(CASES), log)))
    for t in suite.subtests:
        out.append(result.verdict("%s-%s" % (name, t.name), t.status == Status.PASS,
                                  "" if t.status == Status.PASS else "%s %s; see %s" % (t.status, t.detail, log)))
    if suite.errors:
        out.append(result.verdict(name, False, "%s (crash or hang mid-suite?); log %s" % ("; ".join(suite.errors), log)))
    elif all(r.ok for r in out) and suite.status != Status.PASS:
        out.append(result.verdict(name, False, "the suite's result is %s; log %s" % (suite.status, log)))
    return out


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    if a.parse:
        return judge("parsed", *cases(a.parse, True), a.parse)
    log = os.path.join(qemu.BUILD, "logs", "kunit-uml.log")
    return judge("uml", *cases(log), log)
