#!/usr/bin/env python3
"""Tests of bench/gpu/serve_lean_table.py (no GPU):

    python3 -m unittest discover -s bench/gpu -p 'test_*.py'
"""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import serve_lean_table as st  # noqa: E402

EXPO = """# HELP gpuwatt_gpu_energy_joules_total x
gpuwatt_gpu_energy_joules_total{gpu="0",hostname="h",model="NVIDIA H200",source="counter",uuid="GPU-a"} 1000
gpuwatt_gpu_energy_joules_total{gpu="1",hostname="h",model="NVIDIA H200",source="counter",uuid="GPU-b"} 2000
gpuwatt_process_gpu_energy_joules_total{comm="python3",gpu="0",pid="7",uuid="GPU-a"} 600
gpuwatt_process_gpu_energy_joules_total{comm="python3",gpu="0",pid="8",uuid="GPU-a"} 100
gpuwatt_gpu_unattributed_energy_joules_total{gpu="0",uuid="GPU-a"} 300
gpuwatt_process_gpu_energy_joules_total{comm="x",gpu="1",pid="9",uuid="GPU-b"} 1500
gpuwatt_gpu_unattributed_energy_joules_total{gpu="1",uuid="GPU-b"} 480
gpuwatt_sampler_cpu_seconds_total 0.2
"""


class TestSplit(unittest.TestCase):
    def test_sum_against_counter(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m")
            with open(p, "w") as f:
                f.write(EXPO)
            rows = st.split_check(st.parse_metrics(p))
        self.assertEqual([r[0] for r in rows], ["0", "1"])
        g0, g1 = rows
        self.assertAlmostEqual(g0[4], 0.0)  # 600 + 100 + 300 = 1000
        self.assertEqual(g0[5], 2)
        self.assertAlmostEqual(g1[4], -1.0)  # 1980 of 2000: 1 % short, outside 0.4 %
        self.assertGreater(abs(g1[4]), st.SUM_TOL)

    def test_missing_scrape(self):
        self.assertIsNone(st.parse_metrics("/nonexistent/metrics"))


if __name__ == "__main__":
    unittest.main()
