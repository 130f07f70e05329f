"""The VMM's part for vmclock's vm_generation_counter, which QEMU 10.0's
-device vmclock never sets: find the vmclock page in a QEMU process and
write the counter there through /proc/PID/mem (our child: same uid).

Layout from include/uapi/linux/vmclock-abi.h; only the fields used here.
Writes follow the ABI's seqcount: seq_count odd while the page changes,
even after. They are made while the guest is stopped (before its first
cont, or once an incoming snapshot is loaded): no vCPU reads half a write.
"""
import os
import re
import struct
from typing import Iterable, List, NamedTuple, Optional, Tuple

from . import qemu

MAGIC = b"VCLK"
# Offsets in struct vmclock_abi.
SEQ, MARKER, FLAGS, COUNTER = 0x0c, 0x10, 0x18, 0x68
HEADER = COUNTER + 8  # every field read here
FLAG_GEN_COUNTER = 1 << 8  # VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT
# QEMU cannot deliver that notification: set only to make poll() wait
# (vmclock-hold, whose waiters only the device's removal wakes).
FLAG_NOTIFICATION = 1 << 9
REGION = "vmclock_page"  # QEMU's name for the page's RAM (hw/acpi/vmclock.c)


class Page(NamedTuple):
    magic: bytes
    size: int
    version: int
    seq: int
    marker: int
    flags: int
    counter: int


class VmclockError(RuntimeError):
    pass


def decode(raw: bytes) -> Page:
    """The page's first HEADER bytes as a Page."""
    if len(raw) < HEADER:
        raise VmclockError("short vmclock page read: %d bytes" % len(raw))
    magic, size, version = struct.unpack_from("<4sIH", raw, 0)
    (seq,) = struct.unpack_from("<I", raw, SEQ)
    marker, flags = struct.unpack_from("<QQ", raw, MARKER)
    (counter,) = struct.unpack_from("<Q", raw, COUNTER)
    return Page(magic, size, version, seq, marker, flags, counter)


def counter_writes(page: Page, counter: int, flags: int = 0) -> List[Tuple[int, bytes]]:
    """(offset, bytes) to write, in order, to set vm_generation_counter
    and its flag (and flags) on a page that now reads page."""
    if page.seq & 1:
        raise VmclockError("seq_count %d is odd: the page is mid-update" % page.seq)
    return [(SEQ, struct.pack("<I", (page.seq + 1) & 0xffffffff)),
            (FLAGS, struct.pack("<Q", page.flags | FLAG_GEN_COUNTER | flags)),
            (COUNTER, struct.pack("<Q", counter % (1 << 64))),
            (SEQ, struct.pack("<I", (page.seq + 2) & 0xffffffff))]


def apply(raw: bytes, writes: Iterable[Tuple[int, bytes]]) -> bytes:
    out = bytearray(raw)
    for off, data in writes:
        out[off:off + len(data)] = data
    return bytes(out)


def mtree_gpa(text: str) -> Optional[int]:
    """The guest physical address 'info mtree' gives the page, or None."""
    m = re.search(r"^\s*([0-9a-f]+)-[0-9a-f]+ \(prio -?\d+, ram\): %s\r?$" % REGION, text, re.M)
    return int(m.group(1), 16) if m else None


def gpa2hva(text: str) -> Optional[Tuple[int, str]]:
    """(host address, region name) from HMP gpa2hva's answer, or None."""
    m = re.search(r"Host virtual address for 0x[0-9a-f]+ \((\S+)\) is 0x([0-9a-f]+)", text)
    return (int(m.group(2), 16), m.group(1)) if m else None


def hmp(qmp: qemu.QMP, line: str) -> str:
    return qmp.cmd("human-monitor-command", **{"command-line": line})


class VmclockPage:
    """One QEMU process's vmclock page, as its VMM sees it."""

    def __init__(self, pid: int, qmp: qemu.QMP) -> None:
        gpa = mtree_gpa(hmp(qmp, "info mtree"))
        if gpa is None:
            raise VmclockError("QEMU pid %d: no %s in 'info mtree' (no -device vmclock?)" % (pid, REGION))
        answer = hmp(qmp, "gpa2hva 0x%x" % gpa)
        got = gpa2hva(answer)
        if not got or got[1] != REGION:
            raise VmclockError("QEMU pid %d: gpa2hva 0x%x answered %r" % (pid, gpa, answer.strip()))
        self.gpa, self.hva, self.mem = gpa, got[0], "/proc/%d/mem" % pid
        page = self.read()
        if page.magic != MAGIC or page.version != 1:
            raise VmclockError("%s at 0x%x (GPA 0x%x): magic %r version %d, not VCLK 1"
                               % (self.mem, self.hva, gpa, page.magic, page.version))

    def read_raw(self) -> bytes:
        fd = os.open(self.mem, os.O_RDONLY)
        try:
            return os.pread(fd, HEADER, self.hva)
        finally:
            os.close(fd)

    def read(self) -> Page:
        return decode(self.read_raw())

    def set_counter(self, counter: int, flags: int = 0) -> Page:
        """Write counter and VM_GEN_COUNTER_PRESENT (and flags) under
        seq_count; the page as read back, which must be exactly what was
        written."""
        raw = self.read_raw()
        writes = counter_writes(decode(raw), counter, flags)
        fd = os.open(self.mem, os.O_RDWR)
        try:
            for off, data in writes:
                if os.pwrite(fd, data, self.hva + off) != len(data):
                    raise VmclockError("short write to %s at 0x%x" % (self.mem, self.hva + off))
        except OSError as e:
            raise VmclockError("writing %s: %s" % (self.mem, e))
        finally:
            os.close(fd)
        after = self.read_raw()
        if after != apply(raw, writes):
            raise VmclockError("%s: wrote counter %d, read back %s" % (self.mem, counter, decode(after)))
        return decode(after)
