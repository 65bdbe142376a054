"""The recorded run of bench/gpu/call_spread.sh on an H200 (results/nvidia-h200/
2026-11-28-call-5-spread): every figure computed again from its log by call_reference.py, and
what docs/call.md and the run's README say of it: the same GEMMs in one process with the same
operands a minute apart spread as much as with fresh operands or in a new process (1.37 %,
0.84 %, 1.20 % per round, sd beyond the intervals), so the run-to-run spread is the board's
from one minute to the next, not the data's or the process's. Run by internal/benchcheck
(unittest discover)."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import call_reference  # noqa: E402
import call_spread_table  # noqa: E402

RUN = os.path.join(HERE, "..", "..", "results", "nvidia-h200", "2026-11-28-call-5-spread")


class CallSpreadRunTest(unittest.TestCase):
    def setUp(self):
        self.rounds = call_spread_table.load(RUN)
        self.items = sorted({i for r in self.rounds.values() for i in r["items"]})

    def test_figures_again(self):
        self.assertEqual(sorted(self.rounds), [1, 2, 3, 4])
        self.assertEqual(len(self.items), 5)
        for k, r in self.rounds.items():
            for i, x in r["items"].items():
                raw = {"changes": x["changes"], "spans": x["spans"], "idle_before": x["idle_before"], "idle_after": x["idle_after"]}
                again = call_reference.reference(raw)
                self.assertAlmostEqual(again["active_per_call_j"] / x["figure"]["active_per_call_j"], 1, places=12, msg="round %d %s" % (k, i))
                # the counter resolves each 8 s run to ±0.13-0.40 %
                rel = again["active_half_width_j"] / again["active_per_call_j"]
                self.assertTrue(0.001 <= rel <= 0.005, "round %d %s: ±%.2f %%" % (k, i, 100 * rel))
        self.assertEqual({r["seed"] for k, r in self.rounds.items() if k != 3}, {1})
        self.assertEqual(self.rounds[3]["seed"], 2)
        self.assertEqual(len({self.rounds[k]["pid"] for k in (1, 2, 3)}), 1)
        self.assertNotEqual(self.rounds[4]["pid"], self.rounds[1]["pid"])

    def test_spread(self):
        fig = call_spread_table.figures(self.rounds)
        sd = {}
        for a, b in ((1, 2), (2, 3), (2, 4), (3, 4)):
            diffs, sd[(a, b)] = call_spread_table.spread(fig, self.items, a, b)
            self.assertNotIn(None, diffs)
            if (a, b) == (1, 2):
                # nothing changed but a minute: -2.57 .. +2.09 %
                self.assertAlmostEqual(min(diffs), -0.0257, delta=0.0005)
                self.assertAlmostEqual(max(diffs), 0.0209, delta=0.0005)
        self.assertAlmostEqual(sd[(1, 2)], 0.0137, delta=0.0005)
        self.assertAlmostEqual(sd[(2, 3)], 0.0084, delta=0.0005)
        self.assertAlmostEqual(sd[(2, 4)], 0.0120, delta=0.0005)
        self.assertAlmostEqual(sd[(3, 4)], 0.0107, delta=0.0005)
        # the same operands in the same process spread no less than fresh operands or a new process
        self.assertGreaterEqual(sd[(1, 2)], max(sd[(2, 3)], sd[(2, 4)]))


if __name__ == "__main__":
    unittest.main()
