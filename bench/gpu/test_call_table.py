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


class RingSplitTest(unittest.TestCase):
    def test_same_run_on_the_ring(self):
        """A new-format item: the worker's log (test_call_reference's synthetic run), a call.json
        on gpuwatt's clock (10 s behind), and a ring that reads the synthetic power at 20 ms:
        the reference and the ring's whole-run figure both near the truth, the scale ~1."""
        import gzip
        import test_call_reference
        raw, truth = test_call_reference.synthetic(3, noise_w=0.0, drift_w=0.0)
        d = tempfile.mkdtemp()
        os.makedirs(os.path.join(d, "g"))
        off = 10.0
        spans = raw["spans"]
        pc = [{"start_s": s - off, "end_s": e - off, "active_j": truth * m, "energy_j": 0, "method": "inversion"} for s, e, m in spans]
        hw = 0.01 * truth
        call = {"calls": len(spans), "batch": 10, "calls_needed": 0, "rel_half_width": 0.01, "target": 0.01,
                "reached": True, "time_s": fig(0.0045, 0), "channel": "power.samples", "active_j": fig(truth, hw),
                "energy_j": fig(truth + 0.585, hw), "active_idle_w": fig(129.0, 0), "warnings": [], "per_call": pc}
        with open(os.path.join(d, "g", "call.json"), "w") as f:
            json.dump(call, f)
        with open(os.path.join(d, "g", "reference.json"), "w") as f:
            json.dump(dict(raw, op="gemm:1x1x1"), f)
        t, lines = spans[0][0] - 5.0, ["t_s,gpu,channel,power_w,value,unit,driver_t_us"]
        while t < spans[-1][1] + 3.0:
            p = 129.0 + sum(850.0 for s, e, _ in spans if s <= t < e)
            lines.append("%.6f,0,power.samples,%.3f,%.3f,W," % (t - off, p, p))
            t += 0.02
        with gzip.open(os.path.join(d, "g", "trace.csv.gz"), "wt") as f:
            f.write("\n".join(lines) + "\n")
        (r,) = call_table.load(d)
        self.assertTrue(r["active_j_inside"], r)
        self.assertLess(abs(r["active_j_ref"] / truth - 1), 0.002)
        # the ring point-sampled at 20 ms: each 45 ms repetition is seen 2 or 3 times
        self.assertLess(abs(r["ring_active_per_call_j"] / truth - 1), 0.05)
        self.assertLess(abs(r["ring_over_counter"] - 1), 0.02)
        self.assertIn("ring / counter: the calls", call_table.markdown([r]))
        self.assertLess(abs(r["ring_over_counter_active"] - 1), 0.05)


class RecordedH200Test(unittest.TestCase):
    """results/nvidia-h200/2026-11-28-call-2 (bench/gpu/call_gemm.sh on an H200) read again: on
    gpuwatt's own channel the whole run holds every per-call interval (the method), the ring
    reads the calls 0.9-2.4 % above the board's counter (the scale), and against the counter
    with the idle before and after the run only the widest interval holds it."""

    def test_recorded(self):
        d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results", "nvidia-h200", "2026-11-28-call-2")
        rows = call_table.load(d)
        self.assertEqual(len(rows), 5)
        for r in rows:
            hw = (r["active_j_high"] - r["active_j_low"]) / 2
            self.assertLessEqual(abs(r["active_j"] - r["ring_active_per_call_j"]), hw, r["item"])
            self.assertTrue(1.005 < r["ring_over_counter_active"] < 1.03, r["item"])
            self.assertEqual(r["ref_idle_used"], "linear")
            self.assertTrue(0.015 < r["active_j_diff"] < 0.035, (r["item"], r["active_j_diff"]))
        self.assertEqual(sorted(r["item"] for r in rows if r["active_j_inside"]), ["gemm-16384x73728"])


if __name__ == "__main__":
    unittest.main()
