#!/usr/bin/env python3
"""Tests of bench/gpu/intervals_table.py and bench/load/shapes.py's schedule (no GPU, no torch):

    python3 -m unittest discover -s bench/gpu -p 'test_*.py'
"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "load"))

import intervals_table as it  # noqa: E402
import shapes  # noqa: E402


def row(burst, ch, w, err, inside, hw):
    return {"burst": burst, "channel": ch, "window_from_s": 10.0, "window_to_s": 10.0 + w, "reference_j": 100.0,
            "error_pct": err, "inside": inside, "half_width_pct": hw}


class TestTable(unittest.TestCase):
    def test_checks_and_classes(self):
        rows = [row("a", "default", 3.0, 1.5, True, 1.0), row("a", "named:power.usage", 3.0, 0.5, True, 4.0),
                row("b", "default", 0.6, 6.0, True, 8.0), row("b", "power.instant", 0.6, 9.0, False, 3.0)]
        res = it.table({"rows": rows})
        ok = {c["check"]: c["ok"] for c in res["checks"]}
        self.assertTrue(ok["default within 2 % on windows >= 2 s"])  # b's 6 % is on a 0.6 s window
        self.assertFalse(ok["reference inside the interval on every channel"])
        self.assertEqual(res["checks"][1]["failing"], ["b power.instant"])
        self.assertTrue(ok["named power.usage's interval within ±10 % on windows >= 2 s"])
        s = {(x["channel"], x["class"]): x for x in res["summary"]}
        self.assertEqual(s[("default", ">= 2 s")]["max_abs_error_pct"], 1.5)
        self.assertEqual(s[("default", "< 2 s")]["median_half_width_pct"], 8.0)
        self.assertFalse(ok["the same, within the reference's own uncertainty"])  # b has no such figure: strict
        rows[3]["inside_with_reference_uncertainty"] = True
        self.assertTrue(it.table({"rows": rows})["checks"][2]["ok"])
        rows[0]["error_pct"] = -2.5
        self.assertFalse(it.table({"rows": rows})["checks"][0]["ok"])

    def test_no_named_rows_fails_the_check(self):
        res = it.table({"rows": [row("a", "default", 3.0, 0.1, True, 1.0)]})
        self.assertFalse(res["checks"][3]["ok"])


class TestShapes(unittest.TestCase):
    def test_schedule(self):
        order = shapes.schedule(2, 1)
        self.assertEqual(len(order), 2 * len(shapes.SHAPES))
        for r in range(2):
            self.assertEqual(sorted(s for k, s in order if k == r), sorted(shapes.SHAPES))
        self.assertEqual(order, shapes.schedule(2, 1))
        a, b = shapes.inner(10.0, 13.0)
        self.assertAlmostEqual(b - a, shapes.INNER_S)
        self.assertAlmostEqual((a + b) / 2, 11.5)


if __name__ == "__main__":
    unittest.main()
