"""The serial line to a guest program (ttyS1, a unix socket on the host),
and the two request/answer protocols spoken on it, declared once here
beside their parsers (tests/unit tests them):

record server (tests/guest/serve/record-server.c), one answer line per request:
  "r"             -> "REC <n> <getrandom|urandom|vdso> <hex32>", interfaces in turn
  "i"             -> "REC <n> insecure <hex32>", getrandom(GRND_INSECURE)
  "run NAME ARG"  -> the output of /tests/NAME.sh ARG, then "END <status>"
  "credit"        -> "CREDIT ok" or "CREDIT <errno>" (RNDADDENTROPY of 128 bits)
  "state"         -> "STATE ready=<0|1>"
busy probe (tests/guest/serve/busy-probe.c):
  "seq"           -> "SEQ <n per consumer>", consumers running
  "stop"          -> the same, consumers halted
  "dump K FROM N" -> "DUMP <hex16 per output, '-' x 16 where the ring lapped it>"
  "uptime"        -> "UPTIME <seconds>"
Each says on the console that it serves, once ready (fleet.boot waits):
  record server   "RECORD-SERVER-READY <tty> vdso=<yes|no>"
  busy probe      "PROBE-READY getrandom=<va> urandom=<va> vdso=<va> vdso-available=<0|1>
                   ku32=<pa> ku64=<pa> kernel-available=<0|1> vdso-incall=<va>
                   phys=<pa>,<pa>,<pa>,<pa>"   (its counters, the kernel
                   probe's, in_call; pa: guest physical, 0 if unknown)
tests/guest/bigread.c (run by "run bigread MIB") prints, per interface:
  "READING <iface> <buffer address> <pages>" as its read starts,
  "PAGES <iface> <first page> <hash32>..." then "TAIL <iface> <hash64> <seconds>"
  at its end, or "ERROR <iface>: why".
The guest scripts that read fork_events (fepoll.sh, forkcount.sh,
storm.sh, run by "run NAME ARG") print its value as "COUNT <n|missing>".
"""
import re
import socket
import subprocess
import time
from typing import List, NamedTuple, Optional, Tuple, Union

RECORD, INSECURE, CREDIT, STATE = "r", "i", "credit", "state"
SEQ, STOP, UPTIME = "seq", "stop", "uptime"
RECORD_READY = "RECORD-SERVER-READY"
PROBE_READY = "PROBE-READY"
# A record: (n, interface, hex of its 32 bytes).
Record = Tuple[int, str, str]


class GuestError(Exception):
    """A guest that did not answer as its protocol says."""


def run(script: str) -> str:
    return "run " + script


def dump(stream: int, start: int, n: int) -> str:
    return "dump %d %d %d" % (stream, start, n)


def parse_record(line: str) -> Record:
    parts = line.split()
    if len(parts) != 4 or parts[0] != "REC" or not parts[1].isdigit():
        raise GuestError("bad record line %r" % line[:80])
    return int(parts[1]), parts[2], parts[3]


def parse_end(line: str) -> Optional[str]:
    """A run's exit status if line ends its output, else None."""
    return line[4:] if line.startswith("END ") else None


def parse_value(line: str, key: str) -> str:
    """The value of a "KEY value" answer."""
    if not line.startswith(key + " "):
        raise GuestError("want a %s answer, got %r" % (key, line[:80]))
    return line.split(None, 1)[1]


def parse_seq(line: str) -> List[int]:
    return [int(x) for x in parse_value(line, "SEQ").split()]


def parse_dump(line: str, n: int) -> List[str]:
    """A dump's n outputs (hex16 each; '-' x 16 where gone)."""
    hexes = parse_value(line, "DUMP") if line.startswith("DUMP ") else ""
    if len(hexes) != 16 * n:
        raise GuestError("dump of %d outputs has %d characters (%r)" % (n, len(hexes), line[:60]))
    return [hexes[i:i + 16] for i in range(0, len(hexes), 16)]


_PROBE_READY = re.compile(
    r"PROBE-READY getrandom=(\S+) urandom=(\S+) vdso=(\S+) vdso-available=([01]) "
    r"ku32=(\S+) ku64=(\S+) kernel-available=([01]) vdso-incall=(\S+) "
    r"phys=(\S+),(\S+),(\S+),(\S+)$")


class ProbeReady(NamedTuple):
    """The busy probe's banner: what the host reads of the stopped guest."""
    line: str
    vdso: bool         # vDSO getrandom() found (stream 2 runs)
    kernel: bool       # rngprobe.ko's in-kernel consumers run (streams 3, 4)
    kphys: Tuple[str, str]   # their counters' physical addresses
    phys: Tuple[str, str, str]  # the user streams' counters'
    incall: str        # in_call's physical address (the vdso-call profile)


def parse_probe_ready(line: str) -> ProbeReady:
    m = _PROBE_READY.search(line.strip())
    if m is None:
        raise GuestError("bad probe banner %r" % line[:200])
    g = m.groups()
    return ProbeReady(m.group(0), g[3] == "1", g[6] == "1", (g[4], g[5]), (g[8], g[9], g[10]), g[11])


class Reading(NamedTuple):
    iface: str
    addr: int   # the buffer's virtual address
    pages: int


def parse_reading(line: str) -> Reading:
    parts = line.split()
    if len(parts) != 4 or parts[0] != "READING" or not parts[3].isdigit():
        raise GuestError("want a READING line, got %r" % line[:80])
    return Reading(parts[1], int(parts[2], 16), int(parts[3]))


class Pages(NamedTuple):
    iface: str
    first: int
    hashes: List[str]


class Tail(NamedTuple):
    iface: str
    hash: str     # of the read's last MiB
    seconds: str


def parse_bigread(line: str) -> Union[Pages, Tail, None]:
    """A PAGES or TAIL line, None for any other; GuestError on an ERROR or
    END (bigread failed or exited early)."""
    parts = line.split()
    if parts[:1] in (["ERROR"], ["END"]):
        raise GuestError(line)
    if parts[:1] == ["PAGES"] and len(parts) >= 3 and parts[2].isdigit():
        return Pages(parts[1], int(parts[2]), parts[3:])
    if parts[:1] == ["TAIL"] and len(parts) == 4:
        return Tail(parts[1], parts[2], parts[3])
    return None


def parse_count(lines: List[str]) -> Optional[int]:
    """fork_events from a script's COUNT line: None where the kernel has
    none ("missing"); GuestError if there is no such line or it is odd."""
    for line in lines:
        if line.startswith("COUNT "):
            v = line.split()[1:2]
            if v == ["missing"]:
                return None
            if v and v[0].isdigit():
                return int(v[0])
            raise GuestError("bad COUNT line %r" % line[:80])
    raise GuestError("no COUNT line: %s" % " | ".join(lines)[:300])


class Channel:
    """The host end of a guest's ttyS1: connected on first use, every
    read bounded, and given up as soon as the guest's QEMU has exited."""

    def __init__(self, path: str, name: str, proc: "subprocess.Popen[bytes]") -> None:
        self.path, self.name, self.proc = path, name, proc
        self.sock: Optional[socket.socket] = None
        self.buf = b""

    def connect(self, timeout: float = 20) -> socket.socket:
        end = time.monotonic() + timeout
        while self.sock is None:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(self.path)
                self.sock = s
            except OSError:
                s.close()
                if time.monotonic() > end:
                    raise GuestError("%s: ttyS1 socket never came up" % self.name)
                time.sleep(0.05)
        return self.sock

    def send(self, line: str) -> None:
        self.connect().sendall(line.encode() + b"\n")

    def readline(self, timeout: float = 30) -> str:
        end = time.monotonic() + timeout
        sock = self.connect()
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise GuestError("%s: no answer on ttyS1 within %ds" % (self.name, timeout))
            sock.settimeout(left)
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                raise GuestError("%s: ttyS1 closed" % self.name)
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace").rstrip("\r")

    def close(self) -> None:
        if self.sock:
            self.sock.close()
