"""Everything the harness reads from a guest's console, in one place.

Guest tests report in KTAP (Documentation/dev-tools/ktap.rst), as KUnit
and the kselftests do: tests/guest/init prints one subtest per guest
script, each script one result line per check. parse() turns a console
log into results; splats() finds kernel bugs; the kernel messages the
tests look for come from tests/guest/messages.sh, which the guest uses too.
"""
import os
import re
from typing import Iterator, List, Optional, Tuple

from .result import Result, Status

# The kernel's messages, shared with the guest scripts that grep dmesg.
with open(os.path.join(os.path.dirname(__file__), "..", "..", "tests", "guest", "messages.sh")) as _f:
    _MSG = dict(re.findall(r'^([A-Z_]+)="([^"]*)"$', _f.read(), re.M))
RESEED, CRNG_READY = _MSG["RESEED"], _MSG["CRNG_READY"]
EARLY_REKEY = _MSG["EARLY_REKEY"]
NOTIFIED_ONLY = _MSG["NOTIFIED_ONLY"]
# tests/guest/init: the guest ran every test it was given.
DONE = "VMFORK-DONE"

# Any of these on a console fails the run, whatever the tests said: the
# debug kernel (make test-debug) turns lock, memory and context bugs into them.
SPLAT_RE = re.compile(r"Kernel panic|BUG:|Oops|WARNING:|KASAN|UBSAN|KFENCE|"
                      r"possible (recursive|circular) locking|inconsistent lock state|"
                      r"sleeping function called from invalid context|"
                      r"rcu: INFO: .* stall|soft lockup|hung_task|ODEBUG")

# A console line: an optional printk time stamp, the indentation, the rest.
_LINE = re.compile(r"^(?:\[\s*\d+\.\d+\] )?( *)(.*?)\r?$")
_RESULT = re.compile(r"^(ok|not ok) (\d+)(?: (?:- )?([^#]*?))?\s*(?:#\s*(.*))?$")
_PLAN = re.compile(r"^1\.\.(\d+)$")


class Test:
    """One KTAP test: its result line, its plan and its subtests."""

    def __init__(self, name: str = "", depth: int = -1, document: bool = False) -> None:
        # document: opened by a version line (it has, or should have, subtests)
        self.name, self.depth, self.document = name, depth, document
        self.status: Optional[Status] = None  # PASS, FAIL or SKIP once its result line came
        self.detail = ""
        self.plan: Optional[int] = None
        self.subtests: List[Test] = []
        self.errors: List[str] = []

    def leaves(self, path: Tuple[str, ...] = ()) -> List[Result]:
        """Leaf results in order, then one FAIL per parse error. A subtest
        without results, or that failed while none of its results did,
        is a FAIL of its own."""
        out = []
        for t in self.subtests:
            if not t.document:
                out.append(Result(t.status or Status.FAIL, t.name, t.detail, path))
                continue
            mine = t.leaves(path + (t.name,))
            if not t.subtests and not t.errors:
                mine.append(Result(Status.FAIL, t.name, t.detail or "no results", path))
            elif t.status == Status.FAIL and all(r.status != Status.FAIL for r in mine):
                mine.append(Result(Status.FAIL, t.name, t.detail or "failed", path))
            out += mine
        # A test's own errors sit beside its results, named by the test.
        out += [Result(Status.FAIL, self.name or "ktap", e, path[:-1]) for e in self.errors]
        return out

    def find(self, name: str) -> Optional["Test"]:
        """The first test called name, at any depth, or None."""
        for t in self.subtests:
            if t.name == name:
                return t
            found = t.find(name)
            if found:
                return found
        return None


def lines(text: str) -> Iterator[Tuple[int, str]]:
    """(indent, line) per console line, time stamps and CRs removed."""
    for raw in text.splitlines():
        m = _LINE.match(raw)
        assert m, "_LINE matches any line"
        yield len(m.group(1)), m.group(2)


def parse(text: str) -> Test:
    """The KTAP documents in a console log, as one root Test.

    Subtests are told by a version line indented deeper than their
    parent's. Lines that are not KTAP (kernel messages, diagnostics, a
    guest program's output) are skipped wherever they come. A plan that
    the results do not meet is a parse error, and so is a subtest left
    without its result line (a guest that died mid-test). Guest scripts
    print no plan: init's result line for each says whether it stopped,
    failed or reported nothing.
    """
    root = Test()
    stack = [root]
    for indent, line in lines(text):
        version = line.startswith(("KTAP version", "TAP version"))
        plan, res = _PLAN.match(line), _RESULT.match(line)
        if line.startswith("# Subtest: ") and indent == stack[-1].depth:
            stack[-1].name = line[11:].strip()  # named before it ends
        if not (version or plan or res):
            continue
        # A new document at the same depth as an open one ends it.
        while len(stack) > 1 and (indent < stack[-1].depth or
                                  version and indent == stack[-1].depth):
            _close(stack.pop())
        cur = stack[-1]
        if version:
            t = Test(depth=indent, document=True)
            cur.subtests.append(t)
            stack.append(t)
        elif cur is root:
            continue
        elif plan:
            cur.plan = int(plan.group(1))
        elif res:  # what is left: a result line
            status, name, detail = _status(res)
            last = cur.subtests[-1] if cur.subtests else None
            if last is not None and last.depth > indent and last.status is None:
                # The parent's own result line, after its subtests.
                last.name, last.status, last.detail = name, status, detail
            else:
                leaf = Test(name, depth=indent)
                leaf.status, leaf.detail = status, detail
                cur.subtests.append(leaf)
    while len(stack) > 1:
        _close(stack.pop())
    for t in _walk(root):
        if t.status is None and t.depth > 0:
            t.errors.append("no result line: the output stopped mid-test")
    return root


def _walk(t: Test) -> Iterator[Test]:
    for s in t.subtests:
        yield s
        yield from _walk(s)


def _status(m: re.Match[str]) -> Tuple[Status, str, str]:
    directive = (m.group(4) or "").strip()
    name = (m.group(3) or "").strip() or "test-" + m.group(2)
    skip = re.match(r"SKIP\b\s*(.*)", directive, re.I)
    if skip:
        return Status.SKIP, name, skip.group(1)
    return (Status.PASS if m.group(1) == "ok" else Status.FAIL), name, directive


def _close(t: Test) -> None:
    """Check a finished subtest against its plan."""
    n = len(t.subtests)
    if t.plan is not None and n != t.plan:
        t.errors.append("%d of %d planned results reported" % (n, t.plan))


def results(text: str) -> List[Result]:
    """The leaf results of every KTAP document in text."""
    out: List[Result] = []
    for doc in parse(text).subtests:
        out += doc.leaves()
    return out


def splats(text: str) -> List[str]:
    """Console lines that show a kernel bug; [] if the log is clean."""
    return [l.rstrip() for l in text.splitlines() if SPLAT_RE.search(l)]


def read(path: str) -> str:
    """A console log's text, '' if there is none yet."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""
