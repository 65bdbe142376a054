"""bench/gpu/call_reference.py on a synthetic run whose truth is known: a board idling at a
level that drifts (the chip warming), repetitions of a call at a known energy placed as gpuwatt
places them, an energy counter that updates every 100 ms with the exact integral, polled by a
thread whose reads take ~3 ms. The reference must hold the true energy per call above the idle
between the calls within its stated half-width (plus the counter's mJ steps), in-run idle used.
Run by internal/benchcheck (unittest discover)."""
import math
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import call_reference  # noqa: E402


def synthetic(seed, rep_s=0.045, rep_w=850.0, idle0=129.0, drift_w=1.5, reps=100, noise_w=0.5, stalls=0, dip_w=0.0, dip_s=0.15,
              replay=0):
    rng = random.Random(seed)
    wobble = [rng.gauss(0, noise_w) for _ in range(1000)]  # the idle level, 33 ms at a time
    t0 = 1000.0
    idle_end = t0 + 2.0 + 1.0  # the worker's idle, then gpuwatt's lead
    spans, t = [], idle_end
    for _ in range(reps):
        t += 0.182 + 0.02 * rng.random()
        spans.append([t, t + rep_s, 10])
        t += rep_s
    t_last = t
    t_end = t_last + 0.3 + 2.0
    pause = None
    if replay:
        # call_worker.py --replay: the poller paused during gpuwatt's run (from ready to the
        # end of its stdin, gpuwatt's 2 s tail after the last call), then 2 s of idle, the
        # replay (gpuwatt's waits again) and 2 s of idle
        pause = (idle_end - 1.0, t_last + 2.0)
        rb = [pause[1], pause[1] + 2.0]
        t = rb[1]
        gaps = [b[0] - a[1] for a, b in zip(spans, spans[1:])]
        rspans = []
        for i in range(replay):
            t += gaps[i % len(gaps)]
            rspans.append([t, t + rep_s, 10])
            t += rep_s
        t_end = t + 2.0
        spans = spans + rspans
    span_all = t_end - t0

    def idle(x):  # warming over the run (as 1 - e^-t/8s), and wobbling
        u = max(0.0, x - idle_end)
        return idle0 + drift_w * (1 - math.exp(-u / 8.0)) + wobble[int((x - t0) / 0.033) % 1000]

    def calls_energy(x):  # each repetition, and the dip below idle after it (as on an H200)
        return sum(rep_w * max(0.0, min(x, f) - s) - dip_w * max(0.0, min(x, f + dip_s) - f) for s, f, _ in spans if s < x)

    # the counter: updates every 100 ms (phase random) with the exact integral since t0, in
    # mJ; the poller's reads take ~3 ms
    ph = rng.random() * 0.1
    ups = [t0 + ph + 0.1 * k for k in range(int(span_all / 0.1))]
    vals, e_idle, prev = [], 0.0, t0
    for u in ups:
        h = (u - prev) / 40
        e_idle += sum(idle(prev + (i + 0.5) * h) for i in range(40)) * h
        prev = u
        vals.append(int((e_idle + calls_energy(u)) * 1000))
    changes, x, last, prev_t0 = [], t0, None, None
    j = -1
    while x < t_end:
        if pause and pause[0] <= x < pause[1]:
            x, prev_t0 = pause[1], None
            continue
        r0, r1 = x, x + 0.0025 + 0.001 * rng.random()
        if stalls and rng.random() < stalls:
            r1 += 0.15  # a read held up past an update (the host busy)
        m = r0 + (r1 - r0) * rng.random()  # when the read saw the counter
        while j + 1 < len(ups) and ups[j + 1] <= m:
            j += 1
        e = vals[j] if j >= 0 else 0
        if last is None or prev_t0 is None:
            changes.append([r0, r1, e] + ([] if last is None else ["resume"]))
        elif e != last:
            changes.append([prev_t0, r1, e])
        last, prev_t0 = e, r0
        x = r1 + 0.001
    raw = {"spans": spans, "changes": changes, "idle_before": [t0, None], "idle_after": [t_last + 0.3, t_end]}
    if replay:
        raw["spans"], raw["replay_spans"] = spans[:reps], spans[reps:]
        raw["replay_idle_before"], raw["idle_after"] = rb, [spans[-1][1], t_end]
    # truth: per call above the idle between the calls (the drifting, wobbling level: its
    # wobble averages out over the run, and is in the reference's interval)
    act = (rep_w * rep_s - dip_w * dip_s) / 10
    return raw, act


class CallReferenceTest(unittest.TestCase):
    def test_holds_truth(self):
        inside = 0
        for seed in range(10):
            raw, truth = synthetic(seed)
            r = call_reference.reference(raw)
            self.assertNotIn("error", r)
            self.assertEqual(r["calls"], 1000)
            self.assertEqual(r["change_times"], "lattice")
            self.assertEqual(r["idle_used"], "linear")
            err = abs(r["active_per_call_j"] - truth)
            if err <= r["active_half_width_j"]:
                inside += 1
            self.assertLess(err / truth, 0.005, r)
            self.assertIn("J per call above active idle", call_reference.summary(r))
        self.assertGreaterEqual(inside, 8)  # of 10

    def test_dip_after_each_call(self):
        # 5 W below idle for 150 ms after each repetition: the counter's intervals in the gaps
        # read low, the in-run level with them; the line before/after holds the truth (the
        # dip counted as the call's)
        for seed in range(4):
            raw, truth = synthetic(20 + seed, dip_w=5.0)
            r = call_reference.reference(raw)
            self.assertEqual(r["idle_used"], "linear")
            self.assertLess(abs(r["active_per_call_j"] - truth), r["active_half_width_j"], call_reference.summary(r))
            self.assertGreater(r["active_per_call_in_run_j"] / truth - 1, 0.01)

    def test_replay(self):
        # the worker's reference run (--replay): the same calls with gpuwatt's waits after
        # gpuwatt's run, the counter not read during that run; both figures hold the truth
        # (the dip below idle after each call counted as the call's)
        inside = 0
        for seed in range(10):
            raw, truth = synthetic(30 + seed, dip_w=4.0, replay=60)
            r = call_reference.replay_reference(raw)
            self.assertNotIn("error", r)
            self.assertEqual(r["calls"], 600)
            self.assertEqual(r["idle_used"], "linear")
            self.assertEqual(r["change_times"], "lattice")
            inside += abs(r["active_per_call_j"] - truth) <= r["active_half_width_j"]
            self.assertLess(abs(r["active_per_call_j"] / truth - 1), 0.003, call_reference.summary(r))
            same = call_reference.reference(raw)
            self.assertNotIn("error", same)
            self.assertEqual(same["calls"], 1000)
            self.assertLess(abs(same["active_per_call_j"] / truth - 1), 0.01, call_reference.summary(same))
        self.assertGreaterEqual(inside, 8)  # of 10 (19 of 20 with seeds 30-49)

    def test_reads_held_up(self):
        # one read in 50 held up for 150 ms: it sees the latest update, two periods after
        # the change before; the times stay on the lattice, the figure stays put
        raw, truth = synthetic(11, stalls=0.02)
        r = call_reference.reference(raw)
        self.assertEqual(r["change_times"], "lattice")
        self.assertLess(abs(r["active_per_call_j"] / truth - 1), 0.005, call_reference.summary(r))
        self.assertLess(abs(r["idle_in_run_w"] - 129.0 - 1.5 * 0.6), 1.0, r)

    def test_warmup_left_out(self):
        # three repetitions back to back before the measured ones (a gpuwatt that warms up)
        raw, truth = synthetic(5)
        s0 = raw["spans"][0][0] - 0.19
        raw["spans"] = [[s0 - 0.15 + 0.05 * i, s0 - 0.15 + 0.05 * i + 0.045, 10] for i in range(3)] + raw["spans"]
        r = call_reference.reference(raw)
        self.assertEqual(r["warmup_left_out"], 3)
        self.assertEqual(r["calls"], 1000)
        self.assertGreater(r["run_from"], raw["spans"][2][1])

    def test_too_little(self):
        r = call_reference.reference({"spans": [[1, 2, 1]], "changes": []})
        self.assertIn("error", r)


if __name__ == "__main__":
    unittest.main()
