"""The series' KUnit suite (random_vmfork): in a guest without a vmgenid
device, so that only the suite's fake ID is watched, one line per case;
then in a guest with one, where every case must skip (a real fork could
be taken for a fake one). Every case must run and pass: the suite's plan
must be met, and a SKIP fails, since the feature exists on the patched kernel.
"""
import os

from . import boot, console, qemu

SUITE = "random_vmfork"
DEVICE_SKIP = "a vmgenid device is bound"


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


def main(a):
    log = a.parse or os.path.join(qemu.BUILD, "logs", "kunit.log")
    ok, suite = cases(log, bool(a.parse), guid="none", obj=a.obj)
    if not ok:
        print("FAIL kunit-boot: the guest did not finish; log %s" % log)
        return 1
    if suite is None:
        print("FAIL kunit-%s: suite did not run (CONFIG_RANDOM_VMFORK_KUNIT_TEST?); log %s" % (SUITE, log))
        return 1
    for t in suite.subtests:
        if t.status == "FAIL":
            print("FAIL kunit-%s: see %s" % (t.name, log))
        elif t.status == "SKIP":
            print("FAIL kunit-%s: skipped on the patched kernel: %s" % (t.name, t.detail))
        else:
            print("PASS kunit-" + t.name)
    for line in console.read(log).splitlines():
        if any(w in line for w in ("Expected", "EXPECTATION FAILED", "ASSERTION FAILED")):
            print("    " + line.strip())
    bad = [t for t in suite.subtests if t.status != "PASS"]
    if not suite.plan or not suite.subtests:
        print("FAIL kunit-%s: no KTAP plan (1..N, N > 0) in the suite; log %s" % (SUITE, log))
        bad.append(suite)
    elif suite.status != "PASS" and not bad:
        print("FAIL kunit-%s: the suite's result is %s; log %s" % (SUITE, suite.status, log))
        bad.append(suite)
    for e in suite.errors:
        print("FAIL kunit-%s: %s (crash or hang mid-suite?); log %s" % (SUITE, e, log))
        bad.append(suite)
    if bad or a.parse:
        return 1 if bad else 0
    if "CONFIG_VMGENID=y" not in qemu.kernel_config(a.obj):
        # A modular vmgenid is not loaded yet when the built-in suite runs.
        print("[kunit] vmgenid is a module here: no device can be bound while the suite runs")
        return 0

    # With a device bound, even one that is not watched (pci=off:
    # notified only), every case must skip.
    log = os.path.join(qemu.BUILD, "logs", "kunit-device.log")
    ok, suite = cases(log, append="pci=off", guid="auto", obj=a.obj)
    got = suite.subtests if suite else []
    skips = [t for t in got if t.status == "SKIP" and t.detail.startswith(DEVICE_SKIP)]
    if not ok:
        print("FAIL kunit-device-bound: the guest did not finish; log %s" % log)
    elif not got or len(skips) != len(got):
        print("FAIL kunit-device-bound: %d of %d cases skipped with a vmgenid device bound; log %s"
              % (len(skips), len(got), log))
    else:
        print("PASS kunit-device-bound: all %d cases skip while a vmgenid device is bound" % len(got))
        return 0
    return 1
