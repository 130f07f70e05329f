"""Boot a kernel in QEMU, run guest tests (tests/guest/NAME.sh), report
one result per result of the guest's KTAP, named by its guest script
(smoke/vmgenid-bound). Exit status 0 only if the guest finished
(VMFORK-DONE, powered off, no kernel bug on its console) and every test
it ran passed.
"""
import argparse
import os
import time
from typing import List, Optional, Sequence, Tuple

from machinery import qemu, result
from machinery.result import Result

LOG = os.path.join(qemu.BUILD, "logs", "boot.log")


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("tests", help="comma-separated guest tests; '' boots and powers off")
    p.add_argument("--initrd", help="default: build/initramfs.cpio + OBJ's probe module")
    p.add_argument("--timeout", type=int, default=180, help="seconds (default %(default)s)")
    p.add_argument("--log", default=LOG,
                   help="the console log (default %(default)s)")
    p.add_argument("--guid", default="auto", help="vmgenid GUID; 'none': no device (default auto)")
    p.add_argument("--append", default="", help="more kernel command line")
    p.add_argument("--qemu", action="append", default=[], metavar="ARG",
                   help="one more QEMU argument (repeat for more)")


def run(s: qemu.Settings, tests: str, obj: Optional[str] = None, initrd: Optional[str] = None, timeout: float = 180,
        log: str = LOG, guid: str = "auto", append: str = "", extra: Sequence[str] = ()
        ) -> Tuple[bool, List[Result], str]:
    """Boot once and say how it went; return (finished, the guest's
    results, why it did not finish). The caller reports the results."""
    kernel, initrd, accel = qemu.guest_files(s, obj, initrd)
    os.makedirs(os.path.dirname(log), exist_ok=True)
    t0 = time.monotonic()
    print("[boot] accelerator: %s%s" % (accel, "" if accel == "kvm" else
          " (KVM unusable here or absent)"), flush=True)
    ok, results, why = qemu.boot(kernel, initrd, tests, accel, log, timeout=timeout,
                                 guid=None if guid == "none" else guid,
                                 append=append, extra=extra)
    # The parsed results beside the log, as result files hold them: what
    # scripts/report counts.
    if os.path.exists(log + ".results"):
        os.remove(log + ".results")
    result.write(results, log + ".results")
    print("[boot] %s in %.1fs, console log %s" %
          ("guest finished" if ok else "guest FAILED", time.monotonic() - t0, log))
    if not ok:
        print("[boot] " + why)
        print(qemu.tail(log))
    return ok, results, why


def verdicts(ok: bool, results: List[Result], why: str) -> List[Result]:
    """The guest's results, and a FAIL 'boot' if it did not finish or
    reported nothing."""
    if not ok:
        return results + [result.verdict("boot", False, why)]
    return results or [result.verdict("boot", False, "the guest reported no result")]


def main(a: argparse.Namespace, s: qemu.Settings) -> List[Result]:
    return verdicts(*run(s, a.tests, None, a.initrd, a.timeout, a.log, a.guid, a.append, a.qemu))
