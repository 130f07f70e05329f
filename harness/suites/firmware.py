"""Malformed firmware: boot the patched kernel once per SSDT in
tests/firmware/ (compiled with iasl, given to QEMU with -acpitable, no
vmgenid device), and with QEMU's own device holding an all-zero ID.
Each case passes if the guest boots without a kernel bug, the driver
printed what it says and bound (or refused) the device as it says, and
the RNG works. A well-formed device is the control: bound, no complaint.

Memory of any type must be accepted; only reserved and ACPI memory is
watched, anything else keeps the notification alone: an ID in RAM the
kernel uses, in RAM set aside as reserved, unusable (a busy range, like
a driver's claim) or persistent memory, and QEMU's device in a guest
without PCI (pci=off: x86 then never registers e820 reserved ranges
above 1 MiB, as with CONFIG_PCI=n, so SeaBIOS's buffer is in no region).
Only RAM the kernel uses is the firmware's fault: no other case may say
FW_BUG, since sound firmware can leave the ID in a region the driver
does not recognise (arm64's nomap memory, the pci=off case).
"""
import argparse
import contextlib
import io
import os
import re
import shutil
import subprocess
from typing import Iterator, Optional, Tuple

from machinery import console, qemu, result
from machinery.result import Result
from suites import boot

FW = os.path.join(qemu.TOP, "tests", "firmware")
# An ID (not all zeroes) where addr-ram.asl says it is.
ID_AT_RAM = ["-device", "loader,addr=0xa000000,data=0x0123456789abcdef,data-len=8",
             "-device", "loader,addr=0xa000008,data=0xfedcba9876543210,data-len=8"]
NOT_PACKAGE = "ADDR is not a package of two integers"
AT = "generation ID at 0x%s is not in reserved or ACPI memory: " + console.NOTIFIED_ONLY
IN_RAM = (r"\[Firmware Bug\]: generation ID at 0x000000000a000000 is in RAM the kernel "
          r"uses: " + console.NOTIFIED_ONLY)
# name, device (an SSDT in tests/firmware/, or QEMU's with this GUID),
# the driver's message (a regex; None: no complaint), bound?, kernel
# command line, more QEMU arguments
CASES = (
    ("no-addr", "ssdt", "cannot evaluate ADDR, the generation ID address: AE_NOT_FOUND", False),
    ("short-package", "ssdt", NOT_PACKAGE, False),
    ("string-package", "ssdt", NOT_PACKAGE, False),
    ("not-package", "ssdt", NOT_PACKAGE, False),
    ("three-package", "ssdt", NOT_PACKAGE, False),
    ("addr-zero", "ssdt", "ADDR gives address 0 for the generation ID", False),
    ("addr-hole", "ssdt", AT % "0000000400000000", True),
    ("addr-mmio", "ssdt", AT % "00000000fed00000", True),
    ("zero-id", "guid=00000000-0000-0000-0000-000000000000",
     "generation ID is all zeroes, the hypervisor has not set it", True),
    ("well-formed", "guid=auto", None, True),
    ("reserved-ram", "ssdt=addr-ram", None, True, "memmap=64K$0xa000000", ID_AT_RAM),
    ("plain-ram", "ssdt=addr-ram", IN_RAM, True, "", ID_AT_RAM),
    ("unusable-ram", "ssdt=addr-ram", AT % "000000000a000000", True,
     "memmap=64K%0xa000000-1+5", ID_AT_RAM),
    ("unknown-type", "ssdt=addr-ram", AT % "000000000a000000", True, "memmap=64K!0xa000000", ID_AT_RAM),
    ("no-pci", "guid=auto", AT % "[0-9a-f]+", True, "pci=off"),
)
# Never a complaint: vmclock's page handed to the vDSO.
HARMLESS = re.compile(r"vDSO getrandom\(\) reads")


def judge(name: str, expect: Optional[str], bound: bool, text: str) -> Tuple[Optional[str], str]:
    """Why the case failed, or (None, what the driver said)."""
    text = text.replace("\r", "")
    got = (re.findall(r"VMGENID-BOUND (\S+)", text) or [None])[0]
    said = [l.split("VMGENID-LOG ", 1)[1] for l in text.splitlines()
            if "VMGENID-LOG " in l and "vmgenid" in l]
    why = [] if got else ["no VMGENID-BOUND line from the guest"]
    if expect:
        found = [re.search(": " + expect, l) for l in said]
        hit = [m.group(0)[2:] for m in found if m]
        if not hit:
            why.append("no driver message '%s'" % expect)
    else:
        hit = []
        odd = [l for l in said if not HARMLESS.search(l)]
        if odd:
            why.append("driver complained: " + odd[0])
    if "Firmware" not in (expect or "") and any("Firmware Bug" in l for l in said):
        why.append("FW_BUG where the firmware is not at fault")
    if got and bound and got == "none":
        why.append("device not bound")
    if got and not bound and got != "none":
        why.append("device bound (%s)" % got)
    return "; ".join(why) or None, hit[0] if hit else "no complaint"


def main(a: argparse.Namespace, s: qemu.Settings) -> Iterator[Result]:
    """One result per case, as each boot ends (a boot each: they come slowly)."""
    out = os.path.join(qemu.BUILD, "firmware")
    os.makedirs(out, exist_ok=True)
    if not shutil.which("iasl"):
        yield result.error("firmware", "iasl missing (make deps: acpica-tools)")
        return
    for name, how, expect, bound, *more in CASES:
        append, extra = (more + ["", []])[:2] if more else ("", [])
        log = os.path.join(qemu.BUILD, "logs", "firmware-%s.log" % name)
        guid = "none"
        if how.startswith("ssdt"):
            asl = how.partition("=")[2] or name
            p = subprocess.run(["iasl", "-p", os.path.join(out, name),
                                os.path.join(FW, asl + ".asl")], capture_output=True, text=True)
            if p.returncode:
                err = [l for l in (p.stdout + p.stderr).splitlines() if "rror" in l]
                yield result.error("firmware-" + name, "iasl: %s" % (err or ["exit %d" % p.returncode])[0])
                continue
            extra = ["-acpitable", "file=%s.aml" % os.path.join(out, name)] + extra
        else:
            guid = how.partition("=")[2]
        shown = io.StringIO()
        with contextlib.redirect_stdout(shown):
            ok, results, why = boot.run(s, "firmware", None, timeout=120, log=log, guid=guid,
                                        append=append, extra=extra)
        with open(os.path.join(out, name + ".out"), "w") as f:
            f.write(shown.getvalue())
        bad = [r.line() for r in boot.verdicts(ok, results, why) if not r.ok]
        if bad:
            yield result.verdict("firmware-" + name, False, "%s; log %s" % (bad[0], log))
            continue
        wrong, said = judge(name, expect, bound, console.read(log))
        yield result.verdict("firmware-" + name, not wrong, "%s; log %s" % (wrong, log) if wrong else
                             "%s, bound: %s, RNG works" % (said, "yes" if bound else "no"))
