"""bench/gpu/call_table.py on synthetic items: the reference inside or outside the interval,
the differences, the repetitions ±1 % needs. Run by internal/benchcheck (unittest discover)."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import call_table  # noqa: E402


def fig(v, hw):
    return {"value": v, "low": v - hw, "high": v + hw, "absolute_low": v - 3 * hw, "absolute_high": v + 3 * hw}


def item(d, name, active, hw, ref_active, calls=100, batch=1, t=0.001):
    os.makedirs(os.path.join(d, name))
    call = {"calls": calls, "batch": batch, "calls_needed": 0, "rel_half_width": hw / active, "target": 0.01,
            "reached": hw / active <= 0.01, "time_s": fig(t, 0), "channel": "power.samples",
            "active_j": fig(active, hw), "energy_j": fig(active + 0.1, hw), "warnings": []}
    ref = {"op": name, "seconds_per_call": t, "active_per_call_j": ref_active, "energy_per_call_j": ref_active + 0.1}
    with open(os.path.join(d, name, "call.json"), "w") as f:
        json.dump(call, f)
    with open(os.path.join(d, name, "reference.json"), "w") as f:
        json.dump(ref, f)


class CallTableTest(unittest.TestCase):
    def test_rows(self):
        d = tempfile.mkdtemp()
        item(d, "a", 1.0, 0.02, 1.01)             # inside, +/-2 %: 4x the calls for 1 %
        item(d, "b", 2.0, 0.01, 2.05, calls=50)  # outside
        os.makedirs(os.path.join(d, "no-ref"))   # skipped
        rows = call_table.load(d)
        self.assertEqual([r["item"] for r in rows], ["a", "b"])
        a, b = rows
        self.assertTrue(a["active_j_inside"])
        self.assertAlmostEqual(a["active_j_diff"], 1.0 / 1.01 - 1)
        self.assertFalse(b["active_j_inside"])
        self.assertFalse(b["active_j_abs_inside"])  # 2 ± 0.03 (three half-widths) holds no 2.05 either
        md = call_table.markdown(rows)
        self.assertIn("| a | 100 × 1 | **no** | 400 |", md)
        self.assertIn("**no**", md)


if __name__ == "__main__":
    unittest.main()
