"""gpuwatt.measure_call against the gpuwatt binary on the sim device (docs/call.md).

Run by internal/cli TestPythonMeasureCall with python/ on PYTHONPATH; by hand:
GPUWATT_BIN=./gpuwatt PYTHONPATH=python python3 python/tests/test_call.py. The sim device
on the wall clock draws no load for the calls: the figures are not the point here (the
method is checked on the twin by internal/call), the plumbing is: the protocol, the calls
counted, the time per call, an exception raised again, the binary gone afterwards.
"""

import os
import time
import unittest

import gpuwatt


class MeasureCallTest(unittest.TestCase):
    def test_calls_and_time(self):
        syncs, took = [], []

        def call():
            t0 = time.monotonic()
            time.sleep(0.002)
            took.append(time.monotonic() - t0)
        res = gpuwatt.measure_call(call, sync=lambda: syncs.append(1),
                                   calls=8, batch=2, device="sim")
        self.assertEqual(res.calls, 8)
        self.assertEqual(res.batch, 2)
        self.assertTrue(res.simulated)
        self.assertEqual(res.raw["format"], "gpuwatt.call/1")
        # 2 ms per call (a sleep: at least that, and far less than the 20 ms period), unless
        # a loaded machine slept longer: then no more than the longest call took, measured here.
        self.assertGreater(res.seconds, 0.0019)
        self.assertLess(res.seconds, max(0.02, 1.5 * max(took)), took)
        self.assertLessEqual(res.seconds_low, res.seconds)
        self.assertLessEqual(res.seconds, res.seconds_high)
        # sync before and after every repetition, the warm-up's three included
        self.assertEqual(len(syncs), 2 * (8 + 3))
        self.assertIn("gpuwatt.call/1", repr(res.raw))

    def test_error_raised_again(self):
        def bad():
            raise RuntimeError("out of memory")
        with self.assertRaises(RuntimeError):
            gpuwatt.measure_call(bad, calls=5, device="sim")

    def test_bad_arguments(self):
        with self.assertRaises(TypeError):
            gpuwatt.measure_call(None)
        with self.assertRaises(TypeError):
            gpuwatt.measure_call(lambda: None, sync=3)


if __name__ == "__main__":
    unittest.main()
