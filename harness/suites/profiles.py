"""Boot one of the guest profiles declared below: which kernel, which
guest tests, which console log, and what a result must be. A profile
whose tests report in KTAP is one line here, not a script.
"""
import argparse
import os
from typing import Dict, List, Tuple, TypedDict

from machinery import qemu, result
from machinery.result import Result, Status
from suites import boot


# run and log in every profile, the rest optional (Python 3.9 has no NotRequired).
class _Profile(TypedDict):
    run: str
    log: str


class Profile(_Profile, total=False):
    kernel: str
    qemu: Tuple[str, ...]
    skip: Tuple[str, str, str]


# name: kernel ("stock": the base kernel), guest tests, console log, more
# QEMU arguments, and optionally a result that must be a SKIP whose
# reason says something: (result, words in its reason, the PASS line
# that reports it).
PROFILES: Dict[str, Profile] = {
    "boot": {"run": "smoke", "log": "boot.log"},
    "smoke": {"run": "smoke,kselftest-random,perm", "log": "boot.log"},
    "vdso-selftests": {"run": "kselftest-vdso", "log": "vdso-selftests.log"},
    # The fork_events kselftest must SKIP, not pass, on the stock kernel,
    # which has no such file: proof that its PASS on the patched one means something.
    "kselftest-stock": {"kernel": "stock", "run": "kselftest-random", "log": "stock-kselftest.log",
                        "skip": ("kselftest-fork_events", "not present", "kselftest-skips-on-stock")},
    # vmclock (QEMU 10.0's -device vmclock) beside vmgenid: smoke's checks
    # in the same guest; without the device the vmclock check must SKIP,
    # so that its PASS means the device probed.
    "vmclock": {"run": "smoke,kselftest-random,vmclock", "log": "vmclock.log", "qemu": ("-device", "vmclock")},
    "vmclock-absent": {"run": "vmclock", "log": "vmclock-absent.log",
                       "skip": ("vmclock-probed", "no /dev/vmclock0", "vmclock-skips-without-device")},
}


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile", choices=sorted(PROFILES))


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    prof = PROFILES[a.profile]
    obj = s.obj_of(prof.get("kernel", "patched"))
    ok, results, why = boot.run(s, prof["run"], obj, log=os.path.join(qemu.BUILD, "logs", prof["log"]),
                                extra=prof.get("qemu", ()))
    if "skip" not in prof:
        return boot.verdicts(ok, results, why)
    # The expected SKIP is reported by its own PASS line, not as a SKIP:
    # the others are shown for the log only.
    name, words, line = prof["skip"]
    for r in results:
        print("[guest] " + r.line())
    got = [r for r in results if r.name == name]
    if not ok:
        return [result.verdict(line, False, why)]
    if got and got[0].status == Status.SKIP and words in got[0].detail:
        return [result.verdict(line, True)]
    return [result.verdict(line, False, "expected %s to SKIP (%s) on the %s kernel, got %s" % (
        name, words, prof.get("kernel", "patched"), got[0].line() if got else "no result"))]
