#!/usr/bin/env python3
"""Tests of bench/gpu/crosscheck.py (and the GPU-free parts of energy_poller.py and
bursts.py) on synthetic data with known answers. Standard library only:

    python3 -m unittest discover -s bench/gpu -p 'test_*.py'

(internal/benchcheck runs this from `go test` where python3 is present.)
"""
import contextlib
import datetime as dt
import io
import json
import math
import os
import random
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "load"))

import crosscheck as cc  # noqa: E402


# A synthetic board: idle 100 W, bursts of 700 W; a counter that publishes the exact integral
# (in whole mJ) every 100 ms at phase 37 ms; a poller whose calls take 2.5 ms and start every
# 3 ms, reading the counter at each call's midpoint.
T0 = 1_800_000_000.0  # wall-clock time of the trace's t = 0
IDLE, LOAD = 100.0, 700.0
BURSTS = [(2.0, 2.3), (4.0, 5.0), (6.5, 6.55), (8.0, 8.2)]  # on the trace's axis
PERIOD, PHASE = 0.1, 0.037
COUNTER0_MJ = 5_000_000


def power(t):
    return LOAD if any(a <= t < b for a, b in BURSTS) else IDLE


def energy(t0, t1):
    """Exact ∫P over [t0, t1] (trace axis)."""
    e = IDLE * (t1 - t0)
    for a, b in BURSTS:
        lo, hi = max(a, t0), min(b, t1)
        if hi > lo:
            e += (LOAD - IDLE) * (hi - lo)
    return e


def counter_mj(t):
    """The counter as read at t: its value at the last update at or before t."""
    k = math.floor((t - PHASE) / PERIOD)
    tk = PHASE + k * PERIOD
    return COUNTER0_MJ + math.floor(1000 * energy(0, tk)), tk


def poller_rows(t_end=10.0, step=0.003, call=0.0025):
    rows, t = [], 0.01
    while t < t_end:
        v, _ = counter_mj(t + call / 2)
        rows.append((T0 + t, T0 + t + call, v))
        t += step
    return rows


def write_poller(path, rows, three=True):
    with open(path, "w") as f:
        if three:
            f.write("t_before_unix_s,t_after_unix_s,energy_mj\n")
            for lo, hi, v in rows:
                f.write(f"{lo:.6f},{hi:.6f},{v}\n")
        else:
            f.write("t_unix_s,energy_mj\n")
            for lo, _, v in rows:
                f.write(f"{lo:.6f},{v}\n")


def rfc3339(t):
    d = dt.datetime.fromtimestamp(int(t), dt.timezone.utc)
    frac = f"{t - int(t):.9f}"[1:].rstrip("0").rstrip(".")
    return d.strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"


def write_trace(d, channels, counter_shift=0.0):
    os.makedirs(d, exist_ok=True)
    meta = {"format": "gpuwatt-trace/1", "start": rfc3339(T0), "duration_s": 10.0,
            "gpus": [{"index": 0, "uuid": "GPU-test"}],
            "channels": [{"gpu": 0, "name": c} for c in channels + ["energy.total", "power.memory.instant"]]}
    with open(os.path.join(d, "trace.json"), "w") as f:
        json.dump(meta, f)
    with open(os.path.join(d, "trace.csv"), "w") as f:
        f.write("t_s,gpu,channel,power_w,value,unit,driver_t_us\n")
        for k in range(5, 95, 7):  # gpuwatt's own counter reads, stamped near the update (± 6 ms)
            t = PHASE + k * PERIOD + ((0.0137 * k) % 0.012 - 0.006)
            v, _ = counter_mj(t)
            f.write(f"{t + counter_shift:.6f},0,energy.total,,{v / 1000:.3f},J,\n")


class Rfc3339(unittest.TestCase):
    def test_go_layouts(self):
        self.assertAlmostEqual(cc.parse_rfc3339("2026-11-23T22:59:24.34530961Z"),
                               dt.datetime(2026, 11, 23, 22, 59, 24, tzinfo=dt.timezone.utc).timestamp() + 0.34530961,
                               places=7)
        self.assertEqual(cc.parse_rfc3339("2026-01-01T00:00:00Z"), 1767225600)
        self.assertEqual(cc.parse_rfc3339("2026-01-01T01:30:00+01:30"), 1767225600)
        self.assertEqual(cc.parse_rfc3339("2025-12-31T22:00:00.5-02:00"), 1767225600.5)
        with self.assertRaises(cc.InputError):
            cc.parse_rfc3339("yesterday")


class Changes(unittest.TestCase):
    def test_instants_and_bounds(self):
        rows = [(0.0, 0.002, 10), (0.003, 0.005, 10), (0.006, 0.008, 12), (0.009, 0.011, 12), (0.012, 0.014, 15)]
        chs = cc.changes(rows)
        self.assertEqual([c["mj"] for c in chs], [12, 15])
        # Midway between the midpoints of the calls before and after: (0.004 + 0.007) / 2.
        self.assertAlmostEqual(chs[0]["t"], 0.0055)
        self.assertEqual((chs[0]["t_lo"], chs[0]["t_hi"]), (0.003, 0.008))
        self.assertEqual(chs[1]["i"], 4)

    def test_counter_going_back_is_bad_input(self):
        with self.assertRaises(cc.InputError):
            cc.changes([(0, 0, 10), (1, 1, 9)])

    def test_window_inclusive_edges(self):
        chs = [{"t": 0.25 * k, "t_lo": 0.25 * k, "t_hi": 0.25 * k, "mj": 1000 * k, "i": k} for k in range(6)]
        # start - pad = 0.5 exactly: that change is "at or before"; end + pad = 1.0: "at or after".
        (a, b), why = cc.window(chs, 0.75, 0.75, 0.25)
        self.assertEqual((a["t"], b["t"]), (0.5, 1.0))
        (a, b), _ = cc.window(chs, 0.875, 0.875, 0.25)
        self.assertEqual((a["t"], b["t"]), (0.5, 1.25))
        w, why = cc.window(chs, 0.125, 0.5, 0.25)
        self.assertIsNone(w)
        self.assertIn("starts too late", why)
        w, why = cc.window(chs, 0.5, 1.125, 0.25)
        self.assertIsNone(w)
        self.assertIn("stops too early", why)


class Reference(unittest.TestCase):
    """The reference of each burst against the exact integral over the counter's true update
    instants, and its stated uncertainty against the integral over the estimated edges."""

    def test_known_answer(self):
        rows = poller_rows()
        chs = cc.changes(rows)
        res = cc.counter_resolution(rows, chs)
        self.assertAlmostEqual(res["update_period_s"], PERIOD, delta=0.003)
        self.assertAlmostEqual(res["poll_interval_s"], 0.003, places=4)
        for a, b in BURSTS:
            (ca, cb), why = cc.window(chs, T0 + a, T0 + b, 0.15)
            self.assertEqual(why, "")
            # The edges are the counter's updates: the last at or before a - 0.15, the first
            # at or after b + 0.15 (to within the 3 ms the poller resolves them).
            ta = PHASE + math.floor((a - 0.15 - PHASE) / PERIOD) * PERIOD
            tb = PHASE + math.ceil((b + 0.15 - PHASE) / PERIOD) * PERIOD
            self.assertLess(abs(ca["t"] - T0 - ta), 0.004, (a, b))
            self.assertLess(abs(cb["t"] - T0 - tb), 0.004, (a, b))
            self.assertLessEqual(ca["t_lo"] - T0, ta)
            self.assertGreaterEqual(ca["t_hi"] - T0, ta)
            ref = cc.reference(chs, ca, cb)
            # Exact to the counter's mJ over the true update instants.
            self.assertLess(abs(ref["energy_j"] - energy(ta, tb)), 0.002, (a, b))
            # The uncertainty stated covers the difference to the window as placed ...
            self.assertLess(abs(ref["energy_j"] - energy(ca["t"] - T0, cb["t"] - T0)), ref["uncertainty_j"])
            # ... and is what 2 edges of ~5.5 ms at idle power make (not inflated).
            self.assertLess(ref["uncertainty_j"], 2 * IDLE * 0.0055 / 2 + 0.01)
            self.assertAlmostEqual(ref["edge_power_w"][0], IDLE, delta=4)  # steps timed to 3 ms of 100


def fake_energy(bias, halfwidth, method_flag_seen):
    """gpuwatt energy as a function of the true energy: channel c is off by bias[c] (a
    fraction) with an interval of ±halfwidth[c]; the report's keys as gpuwatt prints them."""
    def run(frm, to, ch, method):
        method_flag_seen.append(method)
        e = energy(frm, to)
        if ch == "power.instant" and to - frm < 0.6:
            return {"error": "exit 2: a region too short for this channel"}
        x = e * (1 + bias[ch])
        rep = {"energy_raw_j": e * 0.6, "channel_energy_j": x}
        if method or ch == cc.DEFAULT:
            rep.update(energy_j=x, energy_method="inversion" if ch != cc.DEFAULT else "calibrated_ring",
                       energy_low_j=x - halfwidth[ch] * e, energy_high_j=x + halfwidth[ch] * e,
                       # With the board's gain error, 5 % more either side.
                       uncertainty={"partial": True, "absolute_low_j": x - (halfwidth[ch] + 0.05) * e,
                                    "absolute_high_j": x + (halfwidth[ch] + 0.05) * e,
                                    "components": [{"name": "readings", "half_width_j": halfwidth[ch] * e, "known": True},
                                                   {"name": "model", "half_width_j": 0, "known": False}]})
        else:
            # Without --method the estimator's figure is the counter's: the channel's is beside it.
            rep.update(energy_j=e, energy_method="counter", energy_low_j=e * 0.999, energy_high_j=e * 1.001)
        return rep
    return run


class Crosscheck(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.m = os.path.join(self.dir, "measure")
        write_trace(self.m, ["power.samples", "power.usage", "power.instant"])
        self.poller = os.path.join(self.dir, "poller.csv")
        write_poller(self.poller, poller_rows())
        self.bursts = os.path.join(self.dir, "bursts.jsonl")
        with open(self.bursts, "w") as f:
            for i, (a, b) in enumerate(BURSTS):
                f.write(json.dumps({"name": f"b{i}", "length_s": round(b - a, 3),
                                    "start_unix_s": T0 + a, "end_unix_s": T0 + b}) + "\n")
        # Each bias at least 1.5 % from its interval's edge, more than the reference's uncertainty.
        self.bias = {"power.samples": 0.01, "power.usage": -0.03, "power.instant": 0.0, cc.DEFAULT: 0.02}
        self.hw = {"power.samples": 0.03, "power.usage": 0.01, "power.instant": 0.05, cc.DEFAULT: 0.005}

    def run_cc(self, method=True):
        seen = []
        res = cc.crosscheck(self.m, self.poller, self.bursts, ["gpuwatt"], energy=fake_energy(self.bias, self.hw, seen),
                            method=method, jobs=2)
        self.assertEqual(set(seen), {method})
        return res

    def test_errors_and_intervals(self):
        res = self.run_cc()
        self.assertEqual(res["channels"], ["power.samples", "power.instant", "power.usage"])  # no memory channel
        rows = [r for r in res["rows"] if "error_pct" in r]
        for r in rows:
            # The figure is off the true energy over the window by the bias; the reference is
            # the counter's, within its uncertainty of it.
            want = 100 * self.bias[r["channel"]]
            tol = 100 * r["reference_uncertainty_j"] / r["reference_j"] * 1.01 + 0.01
            self.assertAlmostEqual(r["error_pct"], want, delta=tol, msg=(r["burst"], r["channel"]))
            self.assertAlmostEqual(r["raw_error_pct"] or -40, -40, delta=tol + 0.1)
            # A 3 % bias with a 1 % interval excludes the reference; 1 % with 3 % holds it.
            self.assertEqual(r["inside"], abs(self.bias[r["channel"]]) < self.hw[r["channel"]], (r["burst"], r["channel"]))
            self.assertAlmostEqual(r["half_width_pct"], 100 * self.hw[r["channel"]], delta=0.2)
            # With the gain error's 5 % every one holds the reference.
            if r["channel"] != cc.DEFAULT:
                self.assertEqual((r["inside_absolute"], r["interval_partial"]), (True, True))
                self.assertEqual(set(r["components"]), {"readings", "model"})
                self.assertIsNone(r["components"]["model"])  # not known: not a zero
            # The window is on the trace's axis, around the burst.
            self.assertLessEqual(r["window_from_s"], r["burst_from_s"] - 0.15)
            self.assertGreaterEqual(r["window_to_s"], r["burst_to_s"] + 0.15)
            self.assertLess(r["window_to_s"] - r["window_from_s"], r["length_s"] + 0.3 + 2 * PERIOD + 0.01)
        # power.instant refused the short regions: the error is kept, the rest goes on.
        errs = [r for r in res["rows"] if "error" in r]
        self.assertEqual({r["channel"] for r in errs}, {"power.instant"})
        self.assertEqual(sorted(r["burst"] for r in errs),
                         sorted(r["burst"] for r in res["rows"] if r["channel"] == "power.samples"
                                and r["window_to_s"] - r["window_from_s"] < 0.6))
        self.assertIn("b2", [r["burst"] for r in errs])  # the 0.05 s burst's window is < 0.6 s

        cls = {(s["channel"], s["class"]): s for s in res["by_class"]}
        s = cls[("power.usage", ">= 0.5 s")]
        self.assertEqual((s["n"], s["inside"], s["with_interval"], s["coverage"]), (1, 0, 1, 0.0))
        self.assertAlmostEqual(s["max_abs_error_pct"], 3, delta=0.05)
        s = cls[("power.samples", "< 0.2 s")]
        self.assertEqual((s["n"], s["coverage"]), (1, 1.0))
        s = cls[("power.samples", "0.2-0.5 s")]
        self.assertEqual((s["n"], s["coverage"]), (2, 1.0))  # the 0.3 s and 0.2 s bursts
        self.assertEqual(("power.instant", "< 0.2 s") in cls, False)
        bl = {(s["channel"], s["length_s"]): s for s in res["by_length"]}
        self.assertEqual(bl[("power.samples", 0.3)]["n"], 1)
        self.assertAlmostEqual(bl[("power.usage", 1.0)]["mean_error_pct"], -3, delta=0.05)

        # The clock check: gpuwatt's own counter readings fall where the poller saw them appear.
        c = res["clock_check"]
        self.assertEqual((c["checked"], c["ok"]), (13, True))
        self.assertLess(abs(c["median_s"]), 0.004)
        self.assertTrue(-0.009 < c["min_s"] < c["max_s"] < 0.009, c)
        md = cc.markdown(res)
        self.assertRegex(md, r"\| power.usage \| >= 0.5 s \| 1 \| 3.0\d % \| 0/1 \(0 %\) \| 1.00 % \| 1/1 \(100 %\) \| 40.0 % \|")
        self.assertIn("**no**", md)
        self.assertNotIn("no `--method` flag", md)

    def test_without_method_flag(self):
        res = self.run_cc(method=False)
        rows = [r for r in res["rows"] if "error_pct" in r and r["channel"] == "power.samples"]
        self.assertTrue(rows)
        for r in rows:
            # The channel's own figure (channel_energy_j), not the estimator's (the counter's),
            # and no interval: the estimator's is not the channel's.
            self.assertAlmostEqual(r["error_pct"], 1.0, delta=0.2)
            self.assertIsNone(r["inside"])
            self.assertIsNone(r["inside_absolute"])
            self.assertIsNone(r["low_j"])
        d = [r for r in res["rows"] if r["channel"] == cc.DEFAULT and "error_pct" in r]
        self.assertTrue(all(r["inside"] is not None for r in d))
        self.assertIn("no `--method` flag", cc.markdown(res))

    def test_clock_check_catches_a_shift(self):
        write_trace(self.m, ["power.samples"], counter_shift=0.07)
        res = self.run_cc()
        c = res["clock_check"]
        self.assertEqual((c["checked"], c["ok"]), (13, False))
        self.assertAlmostEqual(c["median_s"], 0.07, delta=0.004)
        self.assertIn("the trace's clock is off", cc.markdown(res))

    def test_gpu_mismatch_is_noted(self):
        with open(self.poller + ".meta.json", "w") as f:
            json.dump({"uuid": "GPU-other"}, f)
        res = self.run_cc()
        self.assertTrue(any("GPU-other" in n for n in res["notes"]))

    def test_two_column_poller(self):
        # Calls logged with one time: the edges are known only between readings, a wider
        # (still honest) uncertainty.
        write_poller(self.poller, poller_rows(), three=False)
        res = self.run_cc()
        r = next(r for r in res["rows"] if "error_pct" in r)
        self.assertLess(abs(r["error_pct"] - 100 * self.bias[r["channel"]]),
                        100 * r["reference_uncertainty_j"] / r["reference_j"] * 1.01)

    def test_window_outside_log(self):
        write_poller(self.poller, [r for r in poller_rows() if r[0] < T0 + 7.0])
        res = self.run_cc()
        errs = [r for r in res["rows"] if r["channel"] == "(all)"]
        self.assertEqual([r["burst"] for r in errs], ["b3"])
        self.assertIn("stops too early", errs[0]["error"])

    def test_bad_input_exits_2(self):
        with open(self.poller, "w") as f:
            f.write("time,joules\n1,2\n")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = cc.main([self.m, self.poller, self.bursts, "--gpuwatt", "false", "--out", self.dir])
        self.assertEqual(code, 2)
        self.assertIn("header", err.getvalue())
        with open(self.bursts, "w") as f:
            f.write('{"name": "x", "start_unix_s": 5, "end_unix_s": 4}\n')
        write_poller(self.poller, poller_rows())
        with contextlib.redirect_stderr(err):
            self.assertEqual(cc.main([self.m, self.poller, self.bursts, "--out", self.dir]), 2)
        self.assertIn("not after", err.getvalue())
        with contextlib.redirect_stderr(err):
            self.assertEqual(cc.main([self.m + "-none", self.poller, self.bursts, "--out", self.dir]), 2)

    def test_classes(self):
        self.assertEqual([cc.length_class(x) for x in (0.05, 0.1, 0.2, 0.3, 0.5, 3)],
                         ["< 0.2 s", "< 0.2 s", "0.2-0.5 s", "0.2-0.5 s", ">= 0.5 s", ">= 0.5 s"])


class Bursts(unittest.TestCase):
    def test_schedule(self):
        import bursts
        a = bursts.schedule([0.05, 0.1, 3], 3, 7)
        self.assertEqual(sorted(a), [0.05] * 3 + [0.1] * 3 + [3] * 3)
        self.assertEqual(a, bursts.schedule([0.05, 0.1, 3], 3, 7))  # seeded
        self.assertNotEqual(a, sorted(a))
        self.assertEqual(bursts.parse_lengths("0.05, 1,2"), [0.05, 1.0, 2.0])


class Poller(unittest.TestCase):
    """energy_poller.py against a stand-in pynvml whose counter steps 7 mJ every call."""

    def test_log(self):
        stub = types.ModuleType("pynvml")
        state = {"mj": 1000}

        class NVMLError(Exception):
            pass

        def energy(h):
            state["mj"] += 7
            if state["mj"] == 1000 + 7 * 3:
                raise NVMLError("transient")
            return state["mj"]
        stub.NVMLError = NVMLError
        stub.nvmlInit = stub.nvmlShutdown = lambda: None
        stub.nvmlDeviceGetHandleByIndex = lambda i: ("h", i)
        stub.nvmlDeviceGetName = lambda h: b"Stub H200"
        stub.nvmlDeviceGetUUID = lambda h: "GPU-stub"
        stub.nvmlSystemGetDriverVersion = lambda: "580.0"
        stub.nvmlSystemGetNVMLVersion = lambda: "13.580"
        stub.nvmlDeviceGetTotalEnergyConsumption = energy
        sys.modules["pynvml"] = stub
        try:
            import energy_poller
            out = os.path.join(tempfile.mkdtemp(), "p.csv")
            argv = sys.argv
            sys.argv = ["energy_poller.py", "--out", out, "--seconds", "0.05", "--interval", "0.001"]
            try:
                with contextlib.redirect_stderr(io.StringIO()):
                    energy_poller.main()
            finally:
                sys.argv = argv
        finally:
            del sys.modules["pynvml"]
        rows = cc.load_poller(out)
        self.assertGreater(len(rows), 5)
        self.assertTrue(all(lo <= hi for lo, hi, _ in rows))
        self.assertEqual(rows[0][2], 1007)
        self.assertEqual(rows[2][2], 1028)  # the failed call is skipped, not logged
        with open(out + ".meta.json") as f:
            meta = json.load(f)
        self.assertEqual((meta["uuid"], meta["name"], meta["errors"], meta["calls"]), ("GPU-stub", "Stub H200", 1, len(rows)))


if __name__ == "__main__":
    unittest.main()
