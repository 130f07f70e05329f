"""Host-side unit tests, no QEMU, seconds: the console parser on captured
console logs (tests/fixtures/console/NAME.log beside NAME.expect, what
it must make of them), and the pipeline table against what documents it.
'--update' rewrites the .expect files from the parser (review the diff).
"""
import argparse
import contextlib
import glob
import hashlib
import io
import os
import re
import sys
import tempfile
import unittest
from typing import Any, Container, Dict, List, Optional, Set, Tuple, cast

from . import bench_rng, busy, console, demo, early_crng, firmware, fleet, fork, fork_count, fork_events, \
    kernels, kunit, long_read, pipeline, qemu, rebind, result, storm, vmclock_gen, vmclock_hold, vmclock_page, \
    vmclock_unpriv, window, wire
from .result import Result

FIXTURES = os.path.join(qemu.TOP, "tests", "fixtures", "console")


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--update", action="store_true", help="rewrite the .expect files")


def parsed(path: str) -> str:
    """What the harness makes of a console log, one line per fact."""
    text = console.read(path)
    out = [r.line() for r in console.results(text)]
    out += ["finished" if re.search("^" + console.DONE, text, re.M) else "not finished"]
    out += ["splat: " + l for l in console.splats(text)]
    return "\n".join(out) + "\n"


class ConsoleFixtures(unittest.TestCase):
    def test_fixtures(self) -> None:
        logs = sorted(glob.glob(os.path.join(FIXTURES, "*.log")))
        self.assertGreaterEqual(len(logs), 6)
        for log in logs:
            with self.subTest(os.path.basename(log)):
                with open(log[:-4] + ".expect") as f:
                    self.assertEqual(parsed(log), f.read())

    def test_kunit_suite(self) -> None:
        """The KUnit phase's judge on captured logs: the pinned cases all
        pass; a case missing, or a SKIP (the old suite's with a device),
        fails."""
        def judged(name: str) -> List[Result]:
            log = os.path.join(FIXTURES, name)
            return kunit.judge("t", True, console.parse(console.read(log)).find(kunit.SUITE), log)
        res = judged("kunit-pass.log")
        self.assertTrue(all(r.ok for r in res), res)
        self.assertEqual(len(res), len(kunit.CASES))
        for name in ("kunit-skip.log", "kunit-old.log"):
            self.assertFalse(all(r.ok for r in judged(name)), name)

    def test_cut_short(self) -> None:
        """A guest that dies mid-script: its results so far, and a FAIL."""
        text = "KTAP version 1\n1..2\n  KTAP version 1\n  # Subtest: smoke\n  ok 1 a\n"
        self.assertEqual([r.line() for r in console.results(text)],
                         ["PASS smoke/a", "FAIL smoke: no result line: the output stopped mid-test",
                          "FAIL ktap: 1 of 2 planned results reported"])

    def test_silent_or_failed_script(self) -> None:
        """A script that reports nothing, or fails with passing results, is a FAIL."""
        text = ("KTAP version 1\n1..2\n  KTAP version 1\n  # Subtest: quiet\nok 1 quiet\n"
                "  KTAP version 1\n  # Subtest: smoke\n  ok 1 a\nnot ok 2 smoke # exit status 2\n")
        self.assertEqual([r.line() for r in console.results(text)],
                         ["FAIL quiet: no results", "PASS smoke/a", "FAIL smoke: exit status 2"])

    def test_skip_directive(self) -> None:
        text = "KTAP version 1\n1..2\nok 1 a # SKIP no device\nnot ok 2 b # skipped by hand\n"
        self.assertEqual([r.line() for r in console.results(text)],
                         ["SKIP a: no device", "FAIL b: skipped by hand"])

    def test_result_records(self) -> None:
        """The result file's records: a round trip keeps status, path, name
        and detail (a TAB or newline in it flattened); a line that is not a
        record is an ERROR of its own, never skipped."""
        rs = [result.Result(result.Status.FAIL, "b", "why:\tmore\n", ("smoke",)),
              result.verdict("a", True), result.error("c", "no QMP")]
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "results")
            result.write(rs, f)
            with open(f, "a") as out:
                out.write("PASSED d\n")
            got = result.load(f)
        self.assertEqual([r.line() for r in got],
                         ["FAIL smoke/b: why: more ", "PASS a", "ERROR c: no QMP", "ERROR result-file: "
                          + f + ":4: not a result record: 'PASSED d\\n'"])
        self.assertEqual(got[0].path, ("smoke",))
        self.assertEqual(result.duplicates(rs + [result.verdict("b", True, path=("smoke",))]), ["smoke/b"])
        self.assertEqual(result.printed("[x] PASS a\nPASS a\nFAIL b: why\nSKIP c\nERROR d: x\nPASSED e\n"), 4)


class Judges(unittest.TestCase):
    """The pure verdicts of the fork tests: what they make of outputs."""

    def test_compare(self) -> None:
        a: busy.Outs = [["01" * 8, "02" * 8, "03" * 8], [], [], [], []]
        b: busy.Outs = [["09" * 8, "-" * 16], ["02" * 8, "03" * 8], [], [], []]
        self.assertEqual(busy.compare(a, b)[0], (2, 2, 3))
        # a missing output is never a match, nor counted as compared
        self.assertEqual(busy.compare(b, a)[0], (0, 0, 1))
        self.assertEqual(busy.worst([(0, 0, 8), (2, 1, 8), (2, 2, 8)]), (2, 2, 8))
        # A pair and its clones against the controls, recorded per stream.
        res: busy.Table = {c: {i: [] for i in busy.IFACES} for c in ("fresh", "clone")}
        ctl: busy.Outs = [["0a" * 8, "0b" * 8], [], [], [], []]
        busy.record(res, "fresh", (0,), [["01" * 8, "0b" * 8], [], [], [], []],
                    [["02" * 8, "03" * 8], [], [], [], []], [ctl])
        self.assertEqual(res["fresh"]["getrandom"], [(0, 0, 2)])
        self.assertEqual(res["clone"]["getrandom"], [(1, 1, 2), (0, 0, 2)])

    def test_compare_narrow(self) -> None:
        """u32 outputs repeat by chance: only near the same position counts."""
        far = ["%016x" % i for i in range(200)]
        a: busy.Outs = [[], [], [], far, []]
        b: busy.Outs = [[], [], [], far[::-1], []]
        # value i sits at 199 - i: within WINDOW (64) positions for i in 68..131
        self.assertEqual(busy.compare(a, b)[3][0], 64)

    def test_window_stock(self) -> None:
        o = window.Opts("w", "busy", ["getrandom"], 10)
        hit, miss = (3, 3, 8), (0, 0, 8)
        # The repeat came in a try whose control differed: still the window.
        got = window.verdicts(o, "stock", {"getrandom": [([miss], [hit], [miss, miss]),
                                                         ([hit], [miss], [miss, miss])]})
        self.assertEqual([ok for _, ok, _ in got], [True, True])
        # One clone repeating its snapshot's no-fork stream is the window too,
        # whatever its sibling did.
        got = window.verdicts(o, "stock", {"getrandom": [([miss], [hit], [hit, miss])]})
        self.assertEqual([ok for _, ok, _ in got], [True, True])
        got = window.verdicts(o, "stock", {"getrandom": [([miss], [miss], [miss, miss])]})
        self.assertEqual([ok for _, ok, _ in got], [False, False])
        # Detectability: clones beside a repeating control only.
        self.assertEqual(window.detectability([([miss], [hit], [hit, miss]),
                                               ([miss], [miss], [hit, hit])]), (1, 2))

    def test_window_patched(self) -> None:
        o = window.Opts("w", "busy", ["urandom"], 3)
        c, hit = (0, 0, 8), (1, 1, 8)
        snap = ([c], [hit], [c, c])  # one clean pair, its two clones clean, control repeats
        ok = lambda t, **k: [v for _, v, _ in window.verdicts(o, "patched", {"urandom": t}, **k)]
        self.assertEqual(ok([snap] * 3), [True, True])
        # Fewer than MIN_SNAPSHOTS snapshots, however many pairs, is not enough.
        self.assertEqual(ok([([c, c, c], [hit], [c] * 6)]), [True, False])
        # A clone that repeated the no-fork stream fails, its sibling clean or not.
        self.assertEqual(ok([snap, snap, ([c], [hit], [hit, c])]), [True, False])
        # A repeat in any try fails, whatever the later tries say.
        self.assertEqual(ok([([hit], [hit], [c, c])] + [snap] * 3), [True, False])
        # Clean clones beside a control that did not repeat do not count.
        self.assertEqual(ok([snap, snap, ([c], [c], [c, c])]), [True, False])
        # One repeating control pair of three makes the try count.
        self.assertEqual(ok([snap, snap, ([c], [c, hit, c], [c, c])]), [True, True])
        self.assertAlmostEqual(window.reach(10), 0.259, places=3)
        # The reach per clone, given stock's detectability in the same run.
        why = window.verdicts(o, "patched", {"urandom": [snap] * 3},
                              detect={"urandom": (1, 2)})[-1][2]
        self.assertIn("repeated theirs in 1 of 2 here", why)
        self.assertIn("misses 79% of forks or more", why)  # (1 - 0.05 ** (1 / 6)) / 0.5
        self.assertIn("8 outputs compared each", why)
        # Without vmclock's counter the vDSO is judged nowhere (as stock's);
        # with it, a clone that repeated fails.
        bad = ([c], [hit], [hit, c])
        o = window.Opts("w", "busy", ["vdso"], 3, "vmgenid")
        self.assertEqual([n for n, _, _ in window.verdicts(o, "patched", {"vdso": [bad] * 3})],
                         ["w-patched-control-vdso"])
        o = window.Opts("w", "busy", ["vdso"], 3, "both")
        self.assertFalse(window.verdicts(o, "patched", {"vdso": [bad] * 3})[-1][1])

    def test_window_revert(self) -> None:
        """The series with its checks compiled out: judged as stock, a repeat
        on every interface; a planted fault is judged as the patched kernel."""
        o = window.Opts("w", "busy", ["getrandom", "get_random_u32"], 10)
        hit, miss = (2, 2, 8), (0, 0, 8)
        got = window.verdicts(o, "revert", {"getrandom": [([miss], [hit], [miss, miss])],
                                            "get_random_u32": [([miss], [hit], [miss, hit])]})
        self.assertEqual([(n, ok) for n, ok, _ in got], [("w-revert-control-getrandom", True),
                                                          ("w-revert-repeats-getrandom", False),
                                                          ("w-revert-control-get_random_u32", True),
                                                          ("w-revert-repeats-get_random_u32", True)])
        got = window.verdicts(o, "revert", {i: [([hit], [hit], [miss, miss])] for i in o.ifaces})
        self.assertTrue(all(ok for _, ok, _ in got))
        got = window.verdicts(o, "skip5", {i: [([miss], [hit], [miss, hit])] * 3 for i in o.ifaces})
        self.assertEqual([(n, ok) for n, ok, _ in got][-1], ("w-skip5-get_random_u32", False))

    def test_storm_poller(self) -> None:
        ready = "# ready: 1 pollers on fork_events, count 0"
        woke = "fork_events before=%d after=%d woke=1 timedout=%d errors=0 elapsed=0.1"
        good = [ready, woke % (0, 1, 0), woke % (1, 3, 0), "COUNT 3"]
        self.assertEqual(storm.poller(good, 3), ([], 2))
        self.assertEqual(len(storm.poller(good, 4)[0]), 1)  # one fork not counted
        timedout = [ready, woke % (0, 3, 1), "COUNT 3"]
        self.assertEqual(storm.poller(timedout, 3)[0], ["1 of the poller's 1 rounds timed out or failed"])
        self.assertEqual(len(storm.poller([ready, "COUNT 3"], 3)[0]), 1)  # never read 3

    def test_firmware_judge(self) -> None:
        bound = "VMGENID-BOUND QEMUVGID:00\nVMGENID-LOG [1.0] vmgenid QEMUVGID:00: %s\n"
        self.assertEqual(firmware.judge("x", "bad size", False, "VMGENID-BOUND none\n"
                                        "VMGENID-LOG [1.0] vmgenid: bad size 3\n"), (None, "bad size"))
        self.assertEqual(firmware.judge("x", None, True, bound % "hello")[0], "driver complained: "
                         "[1.0] vmgenid QEMUVGID:00: hello")
        self.assertEqual(firmware.judge("x", None, True, "")[0], "no VMGENID-BOUND line from the guest")
        self.assertEqual(firmware.judge("x", None, True, "VMGENID-BOUND none\n")[0], "device not bound")

    def test_median_ci(self) -> None:
        xs = list(range(10, 0, -1))
        self.assertEqual(bench_rng.median_ci(xs), (2, 9))  # order statistics 2 and 9 of 10
        self.assertEqual(bench_rng.median_ci([3, 1, 2]), (1, 3))  # too few: the range


class VmclockPage(unittest.TestCase):
    """The harness as vmclock's VMM: the page's fields, the seqcount writes,
    QEMU's HMP answers (as QEMU 10.0.2 prints them), the guest's line."""

    # QEMU 10.0.2 at -S: magic, size, version 1, counter_id invalid, seq 2, marker 1.
    AT_S = bytes.fromhex("56434c4b001000000100ff000200000001") + bytes(vmclock_page.HEADER - 17)

    def test_counter_writes(self) -> None:
        page = vmclock_page.decode(self.AT_S)
        self.assertEqual((page.magic, page.size, page.version, page.seq, page.marker),
                         (b"VCLK", 0x1000, 1, 2, 1))
        writes = vmclock_page.counter_writes(page, 1 << 40)
        # seq_count odd before anything else changes, even once all have.
        self.assertEqual(vmclock_page.decode(vmclock_page.apply(self.AT_S, writes[:1])).seq, 3)
        after = vmclock_page.decode(vmclock_page.apply(self.AT_S, writes))
        self.assertEqual((after.seq, after.flags, after.counter, after.marker),
                         (4, vmclock_page.FLAG_GEN_COUNTER, 1 << 40, 1))
        self.assertEqual(vmclock_page.apply(self.AT_S, writes)[vmclock_page.COUNTER:],
                         (1 << 40).to_bytes(8, "little"))
        odd = vmclock_page.decode(vmclock_page.apply(self.AT_S, writes[:1]))
        self.assertRaises(vmclock_page.VmclockError, vmclock_page.counter_writes, odd, 5)

    def test_hmp_answers(self) -> None:
        mtree = ("address-space: memory\r\n  0000000000000000-ffffffffffffffff (prio 0, i/o): system\r\n"
                 "    00000000feffb000-00000000feffbfff (prio 0, ram): vmclock_page\r\n")
        self.assertEqual(vmclock_page.mtree_gpa(mtree), 0xfeffb000)
        self.assertIsNone(vmclock_page.mtree_gpa(mtree.replace("vmclock_page", "pc.ram")))
        self.assertEqual(vmclock_page.gpa2hva(
            "Host virtual address for 0xfeffb000 (vmclock_page) is 0x7f0d58200000\r\n"),
            (0x7f0d58200000, "vmclock_page"))
        self.assertIsNone(vmclock_page.gpa2hva("No memory is mapped at address 0xfeffa000\r\n"))

    def test_guest_view(self) -> None:
        host = vmclock_page.Page(b"VCLK", 4096, 1, 6, 2, 0x100, 8)
        line = "VMCLOCK flags=0x100 counter=8 seq=6 marker=2 via=mmap"
        seen = vmclock_gen.parse(["x", line])
        self.assertEqual(vmclock_gen.problems(seen, 8, host), [])
        self.assertEqual(len(vmclock_gen.problems(seen, 7, host)), 1)  # the write did not land
        # The guest reads another page than the host holds.
        self.assertEqual(len(vmclock_gen.problems(seen, 8, host._replace(counter=9))), 1)
        notified = vmclock_gen.parse([line.replace("0x100", "0x300")])
        self.assertEqual(len(vmclock_gen.problems(notified, 8, host._replace(flags=0x300))), 1)
        unflagged = vmclock_gen.parse([line.replace("0x100", "0x0")])
        self.assertEqual(len(vmclock_gen.problems(unflagged, 8, host._replace(flags=0))), 1)
        self.assertEqual(vmclock_gen.problems(vmclock_gen.parse(["VMCLOCK-ERROR open: x"]), 8, host),
                         ["no VMCLOCK line"])


class ForkJudges(unittest.TestCase):
    """vmclock-unpriv's and fork-count-cases' verdicts on guest lines as
    tests/guest/vmclock-spin.sh and forkcount.sh print them."""

    def test_unpriv_spin(self) -> None:
        j = vmclock_unpriv
        started = j.parse(["VMCLOCK-SPIN uid=65534 from=41", "SPIN-MODE 444"])
        self.assertEqual((j.started_problems(started, 41), started["mode"]), ([], "444"))
        self.assertEqual(len(j.started_problems(started, 40)), 1)  # not the page's value
        self.assertEqual(len(j.started_problems(j.parse(["VMCLOCK-SPIN uid=0 from=41"]), 41)), 1)
        self.assertEqual(len(j.started_problems(j.parse(["VMCLOCK-SPIN-ERROR open=EACCES",
                                                         "SPIN-EXIT 1"]), 41)), 1)
        moved = ["VMCLOCK-SPIN uid=65534 from=41", "VMCLOCK-MOVED from=41 to=42 spins=9", "SPIN-EXIT 0"]
        self.assertEqual(j.moved_problems(j.parse(moved), 41), [])
        self.assertEqual(len(j.moved_problems(j.parse([l.replace("to=42", "to=43") for l in moved]), 41)), 1)
        self.assertEqual(len(j.moved_problems(j.parse(moved[:1] + ["SPIN-RUNNING"]), 41)), 1)

    def test_unpriv_control(self) -> None:
        j = vmclock_unpriv
        state = "SPIN-STATE alive=1 state=R utime=%d uid=65534 vcsw=%d "
        before = j.parse([state % (10, 3)])
        spinning = j.parse(["VMCLOCK-SPIN uid=65534 from=41", "SPIN-RUNNING"])
        self.assertEqual(j.control_problems(before, spinning, j.parse([state % (500, 3)])), [])
        for bad in (state % (10, 3),  # no CPU time: not spinning
                    state % (500, 4),  # blocked once: a syscall in the loop
                    "SPIN-STATE alive=0"):
            with self.subTest(bad):
                self.assertEqual(len(j.control_problems(before, spinning, j.parse([bad]))), 1)
        moved = j.parse(["VMCLOCK-MOVED from=41 to=42 spins=9", "SPIN-EXIT 0"])
        self.assertTrue(j.control_problems(before, moved, j.parse([state % (500, 3)])))

    def test_unpriv_stock(self) -> None:
        j, root = vmclock_unpriv, ["VMCLOCK flags=0x100 counter=1 seq=4 marker=1 via=mmap"]
        refused = j.parse(["VMCLOCK-SPIN-ERROR open=EACCES", "SPIN-EXIT 1"])
        self.assertEqual(j.stock_problems(refused, root), [])
        self.assertEqual(len(j.stock_problems(j.parse(["VMCLOCK-SPIN uid=65534 from=1"]), root)), 1)
        self.assertEqual(len(j.stock_problems(refused, ["VMCLOCK-ERROR open /dev/vmclock0: x"])), 1)

    def test_fork_count(self) -> None:
        f = fork_count
        self.assertEqual([f.count(["x", "COUNT 3"]), f.count(["COUNT missing"])], [3, None])
        self.assertRaises(fleet.GuestError, f.count, ["COUNT ?"])
        self.assertEqual(f.problems(1, 1, 3, 4), [])
        self.assertEqual(f.problems(0, 0, 3, 3), [])
        self.assertEqual(len(f.problems(1, 1, 3, 5)), 1)  # both sources counted: two forks
        self.assertEqual(len(f.problems(1, 2, 3, 4)), 1)  # told twice
        self.assertEqual(len(f.problems(1, 1, None, None)), 1)  # patched without fork_events
        self.assertEqual(f.problems(0, 0, counted=False), [])  # stock: the console alone
        self.assertEqual(len(f.problems(0, 1, counted=False)), 1)


class VmclockHold(unittest.TestCase):
    """vmclock-hold's verdicts on lines as tests/guest/vmclock-hold.sh prints them."""
    FIXED = ["HOLD before=56434c4b", "HOLD waiter-poll=0x18 ms=530", "HOLD waiter-epoll=0x18 ms=531",
             "HOLD unbind=ok", "HOLD read=ENODEV", "HOLD poll=0x18",
             "HOLD epoll=0x18", "HOLD mmap=ENODEV", "HOLD close=ok", "HOLD reopen=56434c4b", "HOLD-EXIT 0"]

    def test_patched(self) -> None:
        j = vmclock_hold
        self.assertEqual(j.patched_problems(j.parse(self.FIXED), []), [])
        self.assertEqual(len(j.patched_problems(j.parse(self.FIXED), ["BUG: KASAN: x"])), 1)
        for step, bad in (("read", "HOLD read=56434c4b"), ("poll", "HOLD poll=0x10"),
                          ("waiter-epoll", "HOLD waiter-epoll=0x0 ms=10000"),
                          ("mmap", "HOLD mmap=mapped"), ("reopen", "HOLD reopen=ENOENT")):
            with self.subTest(step):
                lines = [bad if l.startswith("HOLD %s=" % step) else l for l in self.FIXED]
                self.assertEqual(len(j.patched_problems(j.parse(lines), [])), 1)
        self.assertEqual(len(j.patched_problems(j.parse(self.FIXED[:4] + ["HOLD-EXIT 137"]), [])), 7)

    def test_stock(self) -> None:
        j, killed = vmclock_hold, vmclock_hold.parse(
            ["HOLD before=56434c4b", "HOLD waiter-poll=0x0 ms=10000", "HOLD unbind=ok", "HOLD-EXIT 137"])
        oops = ["BUG: unable to handle page fault for address: ffffc90000012000"]
        both = ["vmclock_miscdev_poll", "vmclock_miscdev_read"]
        self.assertEqual(j.stock_problems(killed, oops, both), [])
        self.assertEqual(len(j.stock_problems(killed, [], [])), 2)
        self.assertEqual(len(j.stock_problems(j.parse(self.FIXED), oops, both)), 1)
        self.assertEqual(len(j.stock_problems(killed, oops, both[:1])), 1)


class LongRead(unittest.TestCase):
    """long-read's page judge on page-hash lists as tests/guest/bigread.c
    prints them: a fork seen at the page in flight passes, one seen late
    (the same later page in every clone) or never fails."""

    N, CUT = 64, 20

    def clones(self, left: Tuple[Optional[int], Optional[int]] = (21, 21),
               tail_alike: bool = False) -> Dict[str, List[str]]:
        """Page hashes: the controls alike, each fresh clone the control's
        up to its page in left (None: to the end), then its own."""
        ctl = ["c%d" % i for i in range(self.N)]
        pages = {"same1": ctl, "same2": list(ctl)}
        for k, (name, d) in enumerate(zip(("fresh1", "fresh2"), left)):
            d = self.N if d is None else d
            own = 0 if tail_alike else k
            pages[name] = ctl[:d] + ["f%d-%d" % (own, i) for i in range(d, self.N)]
        return pages

    def verdicts(self, pages: Dict[str, List[str]], repeats: bool = False,
                 cut: Optional[int] = None) -> Dict[str, bool]:
        return {n.split("long-read-")[1]: ok for n, ok, _ in
                long_read.judge("long-read", self.CUT if cut is None else cut, pages, repeats)}

    def test_in_flight(self) -> None:
        for d in (20, 21):
            with self.subTest(d):
                self.assertTrue(all(self.verdicts(self.clones((d, d))).values()))

    def test_late_or_never(self) -> None:
        late = self.verdicts(self.clones((30, 30)))
        self.assertEqual((late["page-fresh1"], late["page-fresh2"]), (False, False))
        never = self.verdicts(self.clones((None, 21)))
        self.assertFalse(never["page-fresh1"])
        self.assertFalse(self.verdicts(self.clones((19, 21)))["page-fresh1"])  # before the cut

    def test_every_page_after(self) -> None:
        pages = self.clones()
        pages["fresh1"][40] = pages["same1"][40]  # one page back on the control's stream
        self.assertFalse(self.verdicts(pages)["page-fresh1"])
        self.assertFalse(self.verdicts(self.clones(tail_alike=True))["siblings"])

    def test_controls_and_stock(self) -> None:
        pages = self.clones()
        pages["same2"] = pages["same2"][:50] + ["x"] * 14
        self.assertFalse(self.verdicts(pages)["control"])
        stock = self.verdicts(self.clones((None, None)), repeats=True)
        self.assertTrue(all(stock.values()))
        # Past the page in flight is the window (revert: its notification
        # comes later); at the page in flight or the next is a kernel that acts.
        self.assertTrue(self.verdicts(self.clones((None, 60)), repeats=True)["repeats-fresh2"])
        self.assertFalse(self.verdicts(self.clones((None, 21)), repeats=True)["repeats-fresh2"])
        self.assertTrue(self.verdicts(self.clones((None, 22)), repeats=True)["repeats-fresh2"])

    def test_first_zero(self) -> None:
        for n, w in ((10, 0), (10, 4), (10, 10), (1, 1)):
            with self.subTest((n, w)):
                self.assertEqual(long_read.first_zero(lambda p: p < w, n), w)


def record(*stream: object) -> str:
    """32 bytes as the record server prints them (hex), one per stream and index."""
    return hashlib.sha256(repr(stream).encode()).hexdigest()


def records(stream: object, first: int, n: int) -> fleet.Records:
    """{n: (iface, hex)} as fleet.Guest.records() returns them: the record
    server's interfaces in turn by number (tests/guest/serve/record-server.c)."""
    return {k: (fork.IFACES[k % 3], record(stream, k)) for k in range(first, first + n)}


class ForkHarness(unittest.TestCase):
    """fork's verdicts (fork.evaluate) on tries and chains as fork_all()
    collects them. The source drew records 0-2 before its snapshot; each
    clone then draws fork.NREC more, numbered on from its parent's."""

    HS0 = 1754000000  # the source's WireGuard handshake, seconds

    def clone(self, stream: object, first: int, forks: int, reseeds: int, hs: int,
              ping: str = "ok") -> fork.Clone:
        return {"recs": records(stream, first, fork.NREC), "forks": forks, "reseeds": reseeds,
                "ping": ping, "hs": str(hs)}

    def attempt(self, t: int = 0) -> fork.Try:
        got: fork.Try = {"hs0": str(self.HS0), "snap": "fresh1-%d.snap" % t}
        for n in fork.FRESH:
            got[n] = self.clone((n, t), 3, 1, 1, self.HS0 + 2)
        for n in ("same1", "same2"):
            got[n] = self.clone(("src", t), 3, 0, 0, self.HS0)  # no fork: the source's stream
        return got

    def chain(self) -> Dict[str, fork.Clone]:
        # gen2* restore fresh1 (records 3-8 drawn), gen3* gen2; dmesg
        # counts every fork of the line, the console this restore's.
        return {n: self.clone(n, 3 + fork.NREC * (d - 1), d, 1, self.HS0 + 2 * d)
                for n, d in (("gen2", 2), ("gen2b", 2), ("gen3", 3), ("gen3b", 3))}

    def positions(self, alike: Container[int] = ()) -> List[Tuple[str, str]]:
        # The source's next GRND_INSECURE record, and its fresh clone's.
        return [(record("src", 100 + k), record(("pos", k) if k not in alike else "src", 100 + k))
                for k in range(fork.POSITIONS)]

    def failed(self, tries: List[fork.Try], chain: Optional[Dict[str, fork.Clone]] = None,
               pos: Optional[List[Tuple[str, str]]] = None) -> Set[str]:
        return {name for name, why in fork.evaluate(tries, chain or self.chain(),
                                                     pos or self.positions()) if why}

    def test_fork_passes(self) -> None:
        self.assertEqual(len(fork.evaluate([self.attempt()], self.chain(), self.positions())), 11)
        self.assertEqual(self.failed([self.attempt()]), set())
        # A try whose control differed (the crng's own reseed timer) is retried, not failed.
        first = self.attempt(0)
        first["same2"] = self.clone("timer", 3, 0, 0, self.HS0)
        self.assertEqual(self.failed([first, self.attempt(1)]), set())

    def test_fork_fresh_clones_repeat(self) -> None:
        # A repeat in any try fails, even in one the retry went past.
        first = self.attempt(0)
        first["fresh2"]["recs"] = dict(first["fresh1"]["recs"])
        self.assertEqual(self.failed([first, self.attempt(1)]),
                         {"first-record-differs"} | {"records-differ-" + i for i in fork.IFACES})
        one = self.attempt()
        one["fresh3"]["recs"][5] = one["fresh1"]["recs"][5]
        self.assertEqual(self.failed([one]), {"records-differ-vdso"})
        # Stock's way: the first record after the restore repeats.
        one = self.attempt()
        n = min(one["fresh1"]["recs"])
        one["fresh2"]["recs"][n] = one["fresh1"]["recs"][n]
        self.assertEqual(self.failed([one]), {"first-record-differs",
                                              "records-differ-" + one["fresh1"]["recs"][n][0]})
        # One clone that missed its fork, its siblings fine: it repeats the control.
        one = self.attempt()
        one["fresh3"]["recs"][n] = one["same1"]["recs"][n]
        self.assertEqual(self.failed([one]), {"first-record-differs"})

    def test_fork_positions(self) -> None:
        """One clone of ten that drew the source's next bytes fails; so
        does a run that did not reach every position."""
        self.assertEqual(self.failed([self.attempt()], pos=self.positions(alike=(3,))),
                         {"first-call-positions"})
        self.assertEqual(self.failed([self.attempt()], pos=self.positions()[:-1]),
                         {"first-call-positions"})

    def test_fork_on_stock(self) -> None:
        """Stock must fail what the series claims, and pass the rest."""
        out: fork.Outcome = [("first-record-differs", ["alike"]), ("chain", ["alike"]),
                             ("records-differ-urandom", ["alike"]),  # timing: not judged on stock
                             ("base-wireguard", []), ("control-urandom", [])]
        self.assertEqual([(n, not why) for n, why in fork.on_stock([out])],
                         [("stock-first-record-repeats", True), ("stock-chain-repeats", True),
                          ("stock-base-wireguard", True), ("stock-control-urandom", True)])
        out = [("first-record-differs", []), ("chain", []), ("base-wireguard", ["old keys"])]
        self.assertEqual([n for n, why in fork.on_stock([out]) if why],
                         ["stock-first-record-repeats", "stock-chain-repeats", "stock-base-wireguard"])
        # One run that repeated is enough for what the series claims; a
        # base check must hold in every run.
        shown: fork.Outcome = [("first-record-differs", ["alike"]), ("chain", ["alike"]), ("base-wireguard", [])]
        self.assertEqual([n for n, why in fork.on_stock([out, shown]) if why], ["stock-base-wireguard"])

    def test_fork_control_differs(self) -> None:
        last = self.attempt()
        last["same2"] = self.clone("timer", 3, 0, 0, self.HS0)
        self.assertEqual(self.failed([last]), {"control-" + i for i in fork.IFACES})
        last = self.attempt()
        last["same2"]["recs"][6] = ("getrandom", record("timer"))
        self.assertEqual(self.failed([last]), {"control-getrandom"})

    def test_fork_reseed_counts(self) -> None:
        for who, forks, reseeds in (("fresh2", 1, 2),  # acted on twice
                                    ("fresh3", 1, 0),  # counted, never logged
                                    ("same1", 1, 1),  # a fork where there was none
                                    ("gen3", 2, 1)):  # the chain lost a generation
            with self.subTest(who):
                tries, chain = [self.attempt()], self.chain()
                clone = tries[0].get(who) or chain[who]
                clone["forks"], clone["reseeds"] = forks, reseeds
                self.assertEqual(self.failed(tries, chain), {"base-reseed-once"})

    def test_fork_wireguard(self) -> None:
        hs0 = self.HS0
        for who, ping, hs in (("fresh1", "ok", hs0),  # not renewed: the session's old keys
                              ("fresh2", "fail", hs0 + 2),
                              ("same1", "ok", hs0 + 2)):  # renewed without a fork
            with self.subTest(who):
                tries = [self.attempt()]
                tries[0][who].update(ping=ping, hs=str(hs))
                self.assertEqual(self.failed(tries), {"base-wireguard"})

    def test_fork_chain_repeats(self) -> None:
        tries, chain = [self.attempt()], self.chain()
        chain["gen2b"]["recs"] = dict(chain["gen2"]["recs"])  # siblings alike
        self.assertEqual(self.failed(tries, chain), {"chain"})
        chain = self.chain()
        # A child replaying its parent's output, under another number.
        chain["gen3"]["recs"][17] = ("vdso", tries[0]["fresh1"]["recs"][5][1])
        self.assertEqual(self.failed(tries, chain), {"chain"})


class EarlyCrng(unittest.TestCase):
    """early-crng's verdicts on tries as its attempt() returns them: (new
    GUIDs' GRND_INSECURE records alike, the control's, [(early rekey,
    reseed lines) of each new clone]), of early_crng.NREC records."""

    N = early_crng.NREC
    REKEYED = [(1, 0), (1, 0)]

    def verdicts(self, tries: List[early_crng.Try], repeats: bool = False) -> Dict[str, bool]:
        return {name: ok for name, ok, _ in early_crng.verdicts("e", tries, repeats)}

    def test_early_crng_patched(self) -> None:
        self.assertEqual(self.verdicts([(0, self.N, self.REKEYED)]),
                         {"e-diverge": True, "e-logged": True, "e-control": True})
        self.assertFalse(self.verdicts([(1, 2, self.REKEYED), (0, self.N, self.REKEYED)])["e-diverge"])
        # A reseed of a crng that is not ready, a clone that logged nothing, one told twice.
        for logs in ([(0, 1), (1, 0)], [(1, 0), (0, 0)], [(2, 0), (1, 0)]):
            with self.subTest(logs):
                self.assertFalse(self.verdicts([(0, self.N, logs)])["e-logged"])
        self.assertFalse(self.verdicts([(0, self.N - 1, self.REKEYED)])["e-control"])

    def test_early_crng_stock(self) -> None:
        quiet = [(0, 0), (0, 0)]
        self.assertEqual(self.verdicts([(self.N, self.N, quiet)], repeats=True),
                         {"e-repeats": True, "e-control": True})
        self.assertFalse(self.verdicts([(self.N - 1, self.N, quiet)], repeats=True)["e-repeats"])
        self.assertFalse(self.verdicts([(self.N, 0, quiet)] * 3, repeats=True)["e-control"])


class Rebind(unittest.TestCase):
    """rebind's verdicts on what tests/guest/vmgenid.sh and the consoles
    print, and on its tries; lines as recorded in build/results."""

    NOTIFIED_ONLY = ("[    0.957318] vmgenid QEMUVGID:00: generation ID at 0x000000000ffff028 is not "
                     "in reserved or ACPI memory: forks are acted upon when notified only")
    OOPS = ("[    2.611054] BUG: kernel NULL pointer dereference, address: 0000000000000008\n"
            "[    2.612873] Workqueue: kacpi_notify acpi_os_execute_deferred\n"
            "[    2.613265] RIP: 0010:0xffffffff81a1b2c4\n")

    def test_rebind_sweep(self) -> None:
        bound = "BOUND yes DEV QEMUVGID:00 MOD yes"
        ok = lambda *lines: rebind.sweep_verdict("r", list(lines))[1]
        self.assertTrue(ok("SWEEP attempts 9 failed 8 ok yes", bound))
        self.assertFalse(ok("SWEEP attempts 1 failed 0 ok yes", bound))  # nothing failed: nothing swept
        self.assertFalse(ok("SWEEP attempts 64 failed 64 ok no", bound))
        self.assertFalse(ok("SWEEP attempts 9 failed 8 ok yes", "BOUND no DEV QEMUVGID:00 MOD yes"))
        self.assertFalse(ok("SWEEP none: vmgenid.ko is not loaded", bound))

    def test_rebind_away_and_back(self) -> None:
        good: rebind.Seen = {"down": ("no", "builtin"), "unbound": (0, True), "up": ("yes", "builtin"),
                             "missed": (1, 1)}

        def failed(name: str, mode: str, **seen: Tuple[Any, Any]) -> List[str]:
            return [n for n, ok, _ in rebind.away_verdicts(name, mode, dict(good, **seen)) if not ok]
        self.assertEqual([n for n, _, _ in rebind.away_verdicts("rebind", "rebind", good)],
                         ["rebind-unbind", "rebind-unbound-fork", "rebind-bind", "rebind-missed-fork"])
        self.assertEqual(failed("rebind", "rebind"), [])
        cases: Tuple[Tuple[rebind.Seen, str], ...] = (
            (dict(down=("yes", "builtin")), "unbind"),
            (dict(unbound=(1, True)), "unbound-fork"),  # counted while unbound
            (dict(unbound=(0, False)), "unbound-fork"),  # a splat
            (dict(up=("no", "builtin")), "bind"),
            (dict(missed=(1, 0)), "missed-fork"),
            (dict(missed=(2, 2)), "missed-fork"))
        for seen, test in cases:
            with self.subTest(seen):
                self.assertEqual(failed("rebind", "rebind", **seen), ["rebind-" + test])
        module = dict(down=("no", "no"), up=("yes", "yes"))
        self.assertEqual(failed("reload", "reload", **module), [])
        self.assertEqual(failed("reload", "reload", **dict(module, down=("no", "yes"))), ["reload-rmmod"])
        # The fixes alone count no fork: only the console is judged, and no missed fork.
        stable = dict(good, unbound=(1, True))
        del stable["missed"]
        self.assertEqual([(n, ok) for n, ok, _ in rebind.away_verdicts("rebind-stable", "rebind", stable)],
                         [("rebind-stable-unbind", True), ("rebind-stable-unbound-fork", True),
                          ("rebind-stable-bind", True)])
        stable["unbound"] = (0, False)
        self.assertFalse(rebind.away_verdicts("rebind-stable", "rebind", stable)[1][1])

    def test_rebind_nowatch_bound(self) -> None:
        ok = lambda state, msg: rebind.notified_only_verdict("nowatch", state, msg)[1]
        self.assertTrue(ok("yes", [self.NOTIFIED_ONLY]))
        self.assertFalse(ok("yes", []))  # the driver watches: not what this phase tests
        self.assertFalse(ok("yes", [self.NOTIFIED_ONLY] * 2))
        self.assertFalse(ok("no", [self.NOTIFIED_ONLY]))

    def test_rebind_stock_oops(self) -> None:
        ok = lambda state, text, where: rebind.oops_verdict("rebind-stock", state, text, where)[1]
        self.assertTrue(ok("no", self.OOPS, "vmgenid_notify.isra.0"))
        self.assertFalse(ok("yes", self.OOPS, "vmgenid_notify.isra.0"))  # never unbound: another bug
        self.assertFalse(ok("no", self.OOPS, "acpi_ev_notify_dispatch"))
        self.assertFalse(ok("no", self.OOPS.replace("kacpi_notify", "events"), "vmgenid_notify.isra.0"))
        self.assertFalse(ok("no", "", "vmgenid_notify.isra.0"))

    def test_rebind_forks(self) -> None:
        n = rebind.NREC

        def attempt(fresh: Tuple[int, int] = (1, 1), same: Tuple[int, int] = (0, 0), repeat: bool = False,
                    control: bool = True) -> rebind.Try:
            """One try as main's attempt() builds it from clone()'s (records, forks, reseeds)."""
            got: rebind.Try = {"fresh1": (records("fresh1", 6, n),) + fresh,
                               "fresh2": (records("fresh2", 6, n),) + fresh,
                               "same1": (records("src", 6, n),) + same, "same2": (records("src", 6, n),) + same}
            if repeat:
                got["fresh2"][0][6] = got["fresh1"][0][6]
            if not control:
                got["same2"][0][7] = ("urandom", record("timer"))
            got["alike"] = [sum(got[x][0][k] == got[y][0][k] for k in got[x][0])
                            for x, y in (("fresh1", "fresh2"), ("same1", "same2"))]
            return got

        def failed(*tries: rebind.Try) -> List[str]:
            return [t for t, ok, _ in rebind.fork_verdicts("rebind", "bind", list(tries)) if not ok]
        self.assertEqual(failed(attempt()), [])
        self.assertEqual(failed(attempt(control=False), attempt()), [])  # retried, not failed
        self.assertEqual(failed(attempt(repeat=True, control=False), attempt()), ["rebind-forks-detected"])
        self.assertEqual(failed(attempt(fresh=(1, 2))), ["rebind-forks-detected"])
        self.assertEqual(failed(attempt(fresh=(0, 0))), ["rebind-forks-detected"])
        self.assertEqual(failed(attempt(control=False)), ["rebind-control"])
        self.assertEqual(failed(attempt(same=(0, 1))), ["rebind-control"])


class ForkEvents(unittest.TestCase):
    """fork-events' verdicts on the 'fepoll result' lines (tests/guest/fepoll.sh)
    of its five restores, through fork_events.parse(); times and draws as
    recorded in build/results/fork-events."""

    N = 64

    def result(self, before: int, draw: str, reseed: float, back: float, woke: int = N, errors: int = 0,
               after: Optional[int] = None) -> fork_events.Parsed:
        after = before + 1 if after is None else after
        return fork_events.parse([
            "FE before=%d after=%d woke=%d timedout=0 errors=%d elapsed=0.737" % (before, after, woke, errors),
            "FE-DRAW " + draw, "COUNT %d" % after,
            "KMSG [    %.6f] random: %s" % (reseed, console.RESEED),
            "KMSG [    %.6f] fepoll: pollers returned" % back])

    def restores(self) -> Dict[str, fork_events.Parsed]:
        return {"fresh": self.result(0, "8f71bc35881f96dd7122cc20b45c482a", 2.700891, 2.796329),
                "same": fork_events.parse(["FE pending", "COUNT 0"]),
                "fresh-b": self.result(0, "d75784ac46b6e13e3038e12fb2b55fc5", 2.702113, 2.801420),
                "gen2": self.result(1, "0c41c7e3b9d2a6f15e8a7d3c2b1f0e9d", 3.641492, 3.746335),
                "gen3": self.result(2, "5a1e9f3c7b2d4e6f8a0b1c2d3e4f5a6b", 4.604957, 4.704819)}

    def failed(self, got: Dict[str, fork_events.Parsed]) -> List[str]:
        return [name for name, ok, _ in fork_events.verdicts("fe", self.N, got) if not ok]

    def test_fork_events_passes(self) -> None:
        self.assertEqual(self.failed(self.restores()), [])
        self.assertEqual(len(fork_events.verdicts("fe", self.N, self.restores())), 6)

    def test_fork_events_each_fails(self) -> None:
        draw = "8f71bc35881f96dd7122cc20b45c482a"
        for test, name, got in (
                ("wake", "fresh", self.result(0, draw, 2.70, 2.79, after=2)),  # counted twice
                ("many-pollers", "gen3", self.result(2, draw[::-1], 4.60, 4.70, woke=63, errors=1)),
                ("draws-differ", "fresh-b", self.result(0, draw, 2.70, 2.80)),  # the sibling's bytes
                ("control", "same", self.result(0, draw[::-1], 2.70, 2.80)),  # woke without a fork
                ("chain", "gen2", self.result(1, draw[::-1], 3.64, 3.74, after=3)),
                # Back before the reseed: the pollers could read the clones' shared bytes.
                ("after-reseed", "gen2", self.result(1, draw[::-1], 3.75, 3.74)),
                ("after-reseed", "gen3", fork_events.parse(["FE before=2 after=3 woke=64 timedout=0 "
                                                            "errors=0 elapsed=0.7", "COUNT 3"]))):
            with self.subTest(test):
                self.assertEqual(self.failed(dict(self.restores(), **{name: got})), ["fe-" + test])


class Demo(unittest.TestCase):
    """fork-demo's verdict lines: over its tries, (fresh pair's records
    alike, their reseed lines, the control pair's alike, its reseed lines),
    and --deep-path's on the demo's exit and output."""

    def test_demo_verdict(self) -> None:
        ok = lambda *tries: demo.verdict(list(tries))[0]
        self.assertEqual(demo.verdict([(0, 2, 3, 0)]), (True, "fork-demo: PASS: fresh GUIDs: 0 of 3 records "
                         "alike, 2 of 2 clones with one reseed line; same GUID: 3 of 3 records alike, 0 reseed lines "
                         "(want 0, 2, 3, 0)"))
        self.assertTrue(ok((0, 2, 1, 0), (0, 2, 3, 0)))  # retried after the control differed
        self.assertFalse(ok((1, 2, 1, 0), (0, 2, 3, 0)))  # the earlier try's repeat still counts
        self.assertFalse(ok((0, 1, 3, 0)))  # a clone that logged no reseed
        self.assertFalse(ok((0, 2, 3, 1)))  # a reseed without a fork
        self.assertFalse(ok(*[(0, 2, 2, 0)] * 3))  # no control that repeats: the demo shows nothing

    def test_demo_deep_path(self) -> None:
        passed = "[fork-demo] done in 9.3s\n" + demo.verdict([(0, 2, 3, 0)])[1] + "\n"
        failed = "[fork-demo] done in 9.3s\n" + demo.verdict([(1, 2, 3, 0)])[1] + "\n"
        self.assertEqual(demo.deep_path_verdict(105, 0, passed).line(),
                         "PASS fork-demo-deep-path: 105-character checkout path")
        self.assertEqual(demo.deep_path_verdict(105, 1, passed).line(),
                         "FAIL fork-demo-deep-path: exit 1 from a 105-character path")
        self.assertFalse(demo.deep_path_verdict(105, 0, failed).ok)
        self.assertFalse(demo.deep_path_verdict(105, 0, "fork harness failed: no fork-demo: PASS").ok)


class Wire(unittest.TestCase):
    """The guest programs' answers as wire.py reads them (the protocols
    are declared there; the C programs print these lines)."""

    def test_record_server(self) -> None:
        self.assertEqual(wire.parse_record("REC 7 vdso " + "ab" * 32), (7, "vdso", "ab" * 32))
        for bad in ("REC x vdso ab", "REC 7 vdso", "END 0", ""):
            with self.assertRaises(wire.GuestError):
                wire.parse_record(bad)
        self.assertEqual(wire.parse_end("END 0"), "0")
        self.assertIsNone(wire.parse_end("ENDING"))
        self.assertEqual(wire.parse_value("STATE ready=1", "STATE"), "ready=1")
        with self.assertRaises(wire.GuestError):
            wire.parse_value("CREDIT ok", "STATE")
        self.assertEqual(wire.run("bigread 64"), "run bigread 64")

    def test_busy_probe(self) -> None:
        self.assertEqual(wire.parse_seq("SEQ 1 22 333"), [1, 22, 333])
        self.assertEqual(wire.dump(2, 10, 3), "dump 2 10 3")
        self.assertEqual(wire.parse_dump("DUMP " + "0" * 16 + "-" * 16, 2), ["0" * 16, "-" * 16])
        for bad in ("DUMP " + "0" * 15, "SEQ 1", ""):
            with self.assertRaises(wire.GuestError):
                wire.parse_dump(bad, 1)


class Machine(unittest.TestCase):
    def test_machine(self) -> None:
        """A booting TCG guest on one host thread, clones on two; KVM as is."""
        old = os.environ.pop("VMFORK_CPU", None)
        try:
            self.assertEqual(qemu.machine("tcg", True), ["-machine", "q35", "-accel", "tcg,thread=single",
                                                         "-cpu", "max", "-m", "256", "-smp", "2"])
            self.assertEqual(qemu.machine("tcg", False), ["-machine", "q35,accel=tcg", "-cpu", "max",
                                                          "-m", "256", "-smp", "2"])
            self.assertEqual(qemu.machine("kvm", True), ["-machine", "q35,accel=kvm", "-m", "256", "-smp", "2"])
        finally:
            if old is not None:
                os.environ["VMFORK_CPU"] = old


class KernelRegistry(unittest.TestCase):
    """configs/kernels, read by the shell half and here alike."""

    def test_registry(self) -> None:
        names = set(kernels.KERNELS)
        self.assertLessEqual({"patched", "stock", "debug", "kunit"} | set(qemu.KERNELS), names)
        patches = {f[:-6] for f in os.listdir(os.path.join(qemu.TOP, "tests", "kernels")) if f.endswith(".patch")}
        self.assertEqual(set(kernels.VARIANTS), patches)
        # Every kernel the pipeline builds is declared there.
        built = {c.split()[1] for _, _, c in pipeline.PHASES if c.startswith("scripts/build ")}
        self.assertLessEqual(built, names)
        for k in kernels.KERNELS.values():
            for frag in k.fragments:
                self.assertTrue(os.path.exists(os.path.join(qemu.TOP, "configs", frag + ".config")), frag)
        with self.assertRaises(ValueError):
            kernels.parse("a\tb\tmktree\tobj\tguest\n")


class PipelineTable(unittest.TestCase):
    """The phase order lives in pipeline.PHASES; these must not drift from it."""

    names = [n for n, _, _ in pipeline.PHASES if n != "join"]

    def test_readme(self) -> None:
        with open(os.path.join(qemu.TOP, "README.md")) as f:
            readme = f.read()
        table = readme.split("## make test, phase by phase", 1)[-1].split("\n## ", 1)[0]
        self.assertEqual(re.findall(r"^\| `([a-z0-9-]+)` \|", table, re.M), self.names)

    def test_debug(self) -> None:
        with open(os.path.join(qemu.TOP, "tests", "run-debug")) as f:
            self.assertRegex(f.read(), r'tests/vmtest"? test --debug\n')
        debug = [n for n, flags, _ in pipeline.PHASES if set(flags) & set("dD")]
        self.assertEqual([n for n, _, _ in pipeline.selected(debug=True) if n != "join"], debug)
        self.assertNotIn("reload", [n for n, _, _ in pipeline.selected()])

    def test_stable(self) -> None:
        stable = [n for n, flags, _ in pipeline.PHASES if "S" in flags]
        self.assertEqual([n for n, _, _ in pipeline.selected(stable=True) if n != "join"], stable)
        for debug in (False, True):
            self.assertFalse(set(stable) & {n for n, _, _ in pipeline.selected(debug=debug)})

    def test_commands_exist(self) -> None:
        for name, _, cmd in pipeline.PHASES:
            if cmd:
                with self.subTest(name):
                    self.assertTrue(os.access(os.path.join(qemu.TOP, cmd.split()[0]), os.X_OK))

    def test_limits(self) -> None:
        self.assertLessEqual(set(pipeline.LIMITS), set(self.names))

    def test_limit_kills(self) -> None:
        """A phase past its limit is killed and fails, whatever it would have said."""
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()) as out:
            old, pipeline.LIMIT = pipeline.LIMIT, 1
            try:
                pipeline.Runner(d).phase("hang", "sleep 60")
            finally:
                pipeline.LIMIT = old
        self.assertIn("FAIL hang: killed after its limit of 1s", out.getvalue())
        self.assertNotIn("PASS", out.getvalue())

    def test_phase_verdict(self) -> None:
        """What a phase's exit and lines make of it: no silent pass, no SKIP."""
        cases = (("true", "PASS p"), ("false", "FAIL p: exit status 1"),
                 ("result SKIP x no", "FAIL p: 1 test(s) skipped"), ("result PASS a", "PASS a"),
                 ("result PASS a; exit 1", "FAIL p: exit status 1"),
                 ("result ERROR a 'no QMP'", "ERROR a: no QMP"),
                 # printed past the result file: a result the runner would not count
                 ("echo PASS a", "ERROR p-channel: 1 result line(s) printed, 0 recorded"),
                 ("result PASS a; result FAIL a", "ERROR p-names: reported twice: a"))
        for cmd, want in cases:
            with self.subTest(cmd), tempfile.TemporaryDirectory() as d, \
                    contextlib.redirect_stdout(io.StringIO()) as out:
                os.makedirs(os.path.join(d, "bin"))
                script = os.path.join(d, "bin", "phase")
                with open(script, "w") as f:
                    f.write("#!/bin/bash\n. %s/scripts/lib/result.sh\n%s\n" % (qemu.TOP, cmd))
                os.chmod(script, 0o755)
                pipeline.Runner(d).phase("p", script)
                self.assertIn(want, out.getvalue())

    def test_unique(self) -> None:
        self.assertEqual(len(self.names), len(set(self.names)))


def main(a: argparse.Namespace) -> int:
    if a.update:
        for log in sorted(glob.glob(os.path.join(FIXTURES, "*.log"))):
            with open(log[:-4] + ".expect", "w") as f:
                f.write(parsed(log))
        return 0
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    # A module's suite holds a suite per TestCase class, and those the tests.
    tests = [cast(unittest.TestCase, t) for group in suite for t in cast(unittest.TestSuite, group)]
    res = unittest.TextTestRunner(stream=sys.stderr, verbosity=1).run(suite)
    # One line per test for the runner; a failed subTest (one fixture)
    # fails its test, named with the fixture.
    bad: Dict[str, List[Tuple[str, str]]] = {}
    for case, trace in res.failures + res.errors:
        test = getattr(case, "test_case", case)
        bad.setdefault(test.id(), []).append((getattr(case, "_subDescription", lambda: "")(), trace))
    out = []
    for t in tests:
        name = "unit-" + t.id().split(".")[-1].replace("test_", "").replace("_", "-")
        why = ["%s%s" % (sub and sub + ": ", why.strip().splitlines()[-1][:200]) for sub, why in bad.get(t.id(), [])]
        out.append(result.verdict(name, not why, "; ".join(why)))
    return result.report(out)
