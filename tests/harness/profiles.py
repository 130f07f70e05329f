"""Boot one of the guest profiles declared below: which kernel, which
guest tests, which console log, and what a result must be. A profile
whose tests report in KTAP is one line here, not a script.
"""
import os

from . import boot, qemu

# name: kernel ("stock": the base kernel), guest tests, console log, more
# QEMU arguments, and optionally a result that must be a SKIP whose
# reason says something: (result, words in its reason, the PASS line
# that reports it).
PROFILES = {
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


def add_args(p):
    p.add_argument("profile", choices=sorted(PROFILES))


def main(a):
    prof = PROFILES[a.profile]
    obj = qemu.STOCK_OBJ if prof.get("kernel") == "stock" else a.obj
    # An expected SKIP is reported by its own PASS line, not shown as a SKIP.
    ok, results = boot.run(prof["run"], obj, log=os.path.join(qemu.BUILD, "logs", prof["log"]),
                           extra=prof.get("qemu", ()), show="skip" not in prof)
    if "skip" not in prof:
        return 0 if ok and results and all(r.status != "FAIL" for r in results) else 1
    name, words, line = prof["skip"]
    got = [r for r in results if r.name == name]
    if ok and got and got[0].status == "SKIP" and words in got[0].detail:
        print("PASS " + line)
        return 0
    print("FAIL %s: expected %s to SKIP (%s) on the %s kernel, got %s" %
          (line, name, words, prof.get("kernel", "patched"), got or "no result"))
    return 1
