#!/usr/bin/env python3
"""hotkeyd_e2e_test.py: the e2e library's own promises (tests/lib/hotkeyd_e2e.py).

Pins what every e2e test relies on: wait_until returns the first true value, fails naming
what it awaited and the last value, retries only the exceptions it is told to, and never
swallows an AssertionError; settle returns a value once it holds still; metric_value reads
a sample by its labels; Hotkeyd fails at once, with the log, when the binary exits at start,
and answers /metrics and /api/v1/top of a real daemon, counting what it is sent.

Usage: hotkeyd_e2e_test.py [HOTKEYD]   (without HOTKEYD the daemon cases are skipped)
"""

import itertools
import os
import sys
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hotkeyd_e2e as e2e  # noqa: E402

HOTKEYD = sys.argv.pop(1) if len(sys.argv) > 1 else None


class WaitUntil(unittest.TestCase):
    def test_returns_the_first_true_value(self):
        calls = itertools.count()
        self.assertEqual(e2e.wait_until(lambda: next(calls) >= 3 and "done", 5, "x",
                                        interval=0), "done")

    def test_fails_naming_what_and_the_last_value(self):
        with self.assertRaises(AssertionError) as cm:
            e2e.wait_until(lambda: 0, 0.05, "the moon to rise", interval=0.01)
        self.assertIn("the moon to rise", str(cm.exception))
        self.assertIn("last: 0", str(cm.exception))

    def test_retries_only_the_exceptions_it_is_given(self):
        calls = itertools.count()

        def flaky():
            if next(calls) < 2:
                raise OSError("not yet")
            return True
        self.assertTrue(e2e.wait_until(flaky, 5, "x", interval=0, ignore=(OSError,)))
        with self.assertRaises(ValueError):
            e2e.wait_until(lambda: int("x"), 5, "x", ignore=(OSError,))

    def test_an_assertion_error_ends_the_wait_even_when_ignoring_all(self):
        calls = itertools.count()

        def fails():
            next(calls)
            raise AssertionError("the daemon exited")
        with self.assertRaises(AssertionError) as cm:
            e2e.wait_until(fails, 5, "x", ignore=(Exception,))
        self.assertEqual(str(cm.exception), "the daemon exited")
        self.assertEqual(next(calls), 1)  # called once, not retried


class Settle(unittest.TestCase):
    def test_returns_the_value_once_it_holds_still(self):
        values = iter([1, 2, 3])
        self.assertEqual(e2e.settle(lambda: next(values, 3), timeout=5, quiet=0.05,
                                    interval=0.01), 3)

    def test_fails_when_the_value_keeps_moving(self):
        calls = itertools.count()
        with self.assertRaises(AssertionError):
            e2e.settle(lambda: next(calls), timeout=0.1, quiet=0.05, interval=0.01)


class Metrics(unittest.TestCase):
    PAGE = ('# TYPE a counter\na_total 3\nb{x="1",y="a \\"q\\""} 4.5\nb{x="2"} 7\n'
            'c{k="\\\\xff"} 1e-3\n')

    def test_reads_a_sample_by_its_labels(self):
        self.assertEqual(e2e.metric_value(self.PAGE, "a_total"), 3)
        self.assertEqual(e2e.metric_value(self.PAGE, "b", {"x": "2"}), 7)
        self.assertEqual(e2e.metric_value(self.PAGE, "b", {"y": 'a \\"q\\"'}), 4.5)
        self.assertEqual(e2e.metric_value(self.PAGE, "c", {"k": "\\\\xff"}), 0.001)
        self.assertIsNone(e2e.metric_value(self.PAGE, "b", {"x": "3"}))
        self.assertIsNone(e2e.metric_value(self.PAGE, "a"))


@unittest.skipUnless(HOTKEYD, "no hotkeyd given")
class Daemon(unittest.TestCase):
    def setUp(self):
        self.work = e2e.Workdir("e2e-lib-test")

    def tearDown(self):
        e2e.Procs.stop_all()
        self.work.finish(True)

    def test_a_daemon_that_exits_at_start_fails_at_once_with_its_log(self):
        with self.assertRaises(AssertionError) as cm:
            e2e.Hotkeyd(HOTKEYD, "--no-such-flag", work=self.work, ready_timeout=60)
        self.assertIn("hotkeyd exited at start", str(cm.exception))
        self.assertIn("--no-such-flag", str(cm.exception))  # the daemon's own message

    def test_a_ready_daemon_counts_what_it_is_sent(self):
        d = e2e.Hotkeyd(HOTKEYD, "--track.publish-interval=50ms", work=self.work)
        d.send(b"r a\nr a\nw b\n", b"x bad-op\n")
        top = d.wait_top_field("events_received", 3)
        self.assertEqual(top["events_received"], 3)
        self.assertEqual(d.settled_top_field("datagrams_received", quiet=0.2), 2)
        e2e.wait_until(lambda: d.metric("hotkey_events_rejected_total",
                                        {"reason": "unknown_op"}) == 1, 5, "the rejection")
        self.assertTrue(d.alive())
        d.stop()
        self.assertFalse(d.alive())


if __name__ == "__main__":
    unittest.main(verbosity=2)
