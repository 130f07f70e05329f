"""Test results: one type, one printer, one channel to the runner.

Every check is a Result with a Status (after kunit.py's TestStatus):
PASS, FAIL, SKIP, or ERROR when the harness or a tool could not judge
(a dead QMP socket, a missing file, a gate whose tool broke). ERROR
fails the run as FAIL does; it only says whose fault it may be.

A test command's main() returns its results (a list, or a generator when
each takes a boot); harness/vmtest hands them to report(), which prints
them for people ('PASS name', 'FAIL name: why') and writes each one to
the phase's result file, whose path the pipeline
runner passes in the environment (VMFORK_RESULTS): one record per line,
STATUS<TAB>name<TAB>detail. The runner counts that file, not what a
phase printed. The shell half writes the same records (scripts/lib/result.sh).
A tool that runs another tool in order to judge its output runs it
without VMFORK_RESULTS: the inner tool's results are not the phase's.
"""
import dataclasses
import enum
import os
import re
from typing import Iterable, List, Optional, Tuple

ENV = "VMFORK_RESULTS"


class Status(str, enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"
    ERROR = "ERROR"

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class Result:
    """One check. path: the names of the tests it sits in (a guest script,
    a KTAP suite); the runner puts the phase's name in front."""
    status: Status
    name: str
    detail: str = ""
    path: Tuple[str, ...] = ()

    @property
    def full_name(self) -> str:
        return "/".join(self.path + (self.name,))

    @property
    def ok(self) -> bool:
        return self.status == Status.PASS

    def line(self) -> str:
        """As people read it: 'PASS name' or 'FAIL name: why', one line."""
        flat = re.sub(r"\s*[\r\n]+\s*", " | ", self.detail.strip())
        return "%s %s%s" % (self.status.value, self.full_name, (": " + flat) if flat else "")

    def record(self) -> str:
        """As the result file holds it (one line, no TAB inside a field)."""
        flat = re.sub(r"[\t\r\n]+", " ", self.detail)
        return "%s\t%s\t%s\n" % (self.status.value, self.full_name, flat)


# A check as the pure judges return it, (name, ok, why): result.verdict(*v) makes it a Result.
Verdict = Tuple[str, bool, str]


def verdict(name: str, ok: bool, why: str = "", path: Tuple[str, ...] = ()) -> Result:
    """One check's Result: PASS or FAIL, and what it saw either way."""
    return Result(Status.PASS if ok else Status.FAIL, name, why, path)


def error(name: str, why: str) -> Result:
    """The harness could not judge name: an ERROR."""
    return Result(Status.ERROR, name, why)


def parse_record(line: str) -> Result:
    """A result file's line as a Result; ValueError if it is not one."""
    fields = line.rstrip("\n").split("\t")
    if len(fields) != 3 or not fields[1] or fields[0] not in Status.__members__:
        raise ValueError("not a result record: %r" % line[:80])
    *path, name = fields[1].split("/")
    return Result(Status(fields[0]), name, fields[2], tuple(path))


def load(path: str) -> List[Result]:
    """The records of a result file ([] if there is none); a line that is
    not a record is an ERROR result of its own, never skipped."""
    out = []
    try:
        with open(path, errors="replace") as f:
            for n, line in enumerate(f, 1):
                try:
                    out.append(parse_record(line))
                except ValueError as e:
                    out.append(error("result-file", "%s:%d: %s" % (path, n, e)))
    except FileNotFoundError:
        pass
    return out


def write(res: Iterable[Result], path: Optional[str] = None) -> None:
    """Append res to the result file (path, else the one VMFORK_RESULTS
    names; none outside the runner)."""
    path = path or os.environ.get(ENV)
    if path:
        with open(path, "a") as f:
            f.writelines(r.record() for r in res)


def report(res: Iterable[Result]) -> int:
    """Print and record results, each as it comes (res may be a generator
    of a test that boots a guest per result); 1 if any did not pass, else
    0 (an exit status)."""
    bad = False
    for r in res:
        print(r.line(), flush=True)
        write([r])
        bad |= r.status != Status.PASS
    return 1 if bad else 0


def duplicates(res: Iterable[Result]) -> List[str]:
    """Full names that more than one result has: each name is one check."""
    seen, dup = set(), []
    for r in res:
        if r.full_name in seen and r.full_name not in dup:
            dup.append(r.full_name)
        seen.add(r.full_name)
    return dup


# What a printed result line looks like: the runner checks that a phase
# recorded as many results as it printed (a print() that bypassed report()).
PRINTED = re.compile(r"^(PASS|FAIL|SKIP|ERROR) [^\s:]+")


def printed(text: str) -> int:
    return sum(bool(PRINTED.match(line)) for line in text.splitlines())
