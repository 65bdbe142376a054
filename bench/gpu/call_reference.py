#!/usr/bin/env python3
"""The reference of bench/gpu/call_gemm.sh: the board's energy counter over the same run of
calls that gpuwatt measured (issue 34), from the log bench/gpu/call_worker.py writes.

    python3 bench/gpu/call_reference.py REF.json     # computes it again and prints it

The worker polls NVML's energy counter in a thread of its own (no gpuwatt code) and logs every
change [t_lo, t_hi, mJ] (the change happened between the two host times) and every call's
span. The reference is the same calls at the same duty cycle, clocks and temperature as the
measurement, by another sensor and another method:

- the counter's change times: the updates come on a regular period (~100 ms on an H100/H200);
  a lattice fitted to the brackets' midpoints gives each change's time (the latest lattice
  point inside its bracket: a read held up past an update saw the latest one) where the fit
  falls inside the brackets for >= 90 % of them, else each bracket's midpoint is used;
- the run: from the last change at least 5 ms before the first call (A) to the first change
  at least 0.3 s after the last call (B); E = the counter's increase over [A, B] (leading
  repetitions less than 0.1 s apart are gpuwatt's warm-up and are left out, A after them);
- active idle: the counter's mean power over the idle before the first call (the worker's
  2 s and gpuwatt's lead) and over the 2 s after the last (`idle_before`, `idle_after`), a
  line between them at the run's middle (`idle_linear`, the chip warms as it goes). Not the
  counter's intervals in the gaps: on an H200 the power dips 3-6 W below idle for ~150 ms
  after each call (results/nvidia-h200/2026-11-28-call-2), so they read 3-5 W low; that dip
  is the call's doing. Their level (a line through the intervals that begin >= 80 ms after a
  call and end before the next, `idle_in_run`) is given beside it, and used only where there
  is no before and after;
- per call above active idle: (E − idle × (B − A)) / calls (`idle_used` says which idle); in
  all: that plus the idle × the time per call;
- its 95 % half-width: the change times' uncertainty at A and B, and half the difference of
  the idle before and after (how far a warming that was not linear can move the line),
  carried to the figure per call, and the standard errors of the two idle levels. `active_per_call_in_run_j` is the figure with the in-run
  level.

Standard library only.
"""
import json
import math
import sys

GAP_AFTER = 0.080  # a counter interval counts as idle from this long after a call's end


def change_times(changes):
    """[(t, J)] for the counter's changes (the first entry, the first reading, excluded),
    on a fitted lattice where it fits the brackets, and how ('lattice'/'midpoints'), and the
    times' half-uncertainty (s). The lattice is fitted to the narrow brackets only (a read
    held up by the host gives a wide one)."""
    # the first reading, and the first after each pause of the poller, are values, not changes
    ch = [c[:3] for c in changes[1:] if len(c) == 3]
    if len(ch) < 3:
        return [], "none", 0.0
    mids = [(lo + hi) / 2 for lo, hi, _ in ch]
    half = [(hi - lo) / 2 for lo, hi, _ in ch]
    out_mid = [(m, e / 1000.0) for m, (_, _, e) in zip(mids, ch)]
    h_med = sorted(half)[len(half) // 2]
    sel = [i for i in range(len(ch)) if half[i] <= 2 * h_med]
    sm = [mids[i] for i in sel]
    d = sorted(b - a for a, b in zip(sm, sm[1:]))
    if len(sel) < 3 or d[len(d) // 2] <= 0:
        return out_mid, "midpoints", h_med
    p = d[len(d) // 4]  # a quarter: consecutive narrow ones may be two periods apart
    k = [0]  # counted from one change to the next: a period slightly off does not add up
    for a, b in zip(sm, sm[1:]):
        k.append(k[-1] + max(1, round((b - a) / p)))
    n = len(k)
    mk, mm = sum(k) / n, sum(sm) / n
    skk = sum((x - mk) ** 2 for x in k)
    if skk == 0:
        return out_mid, "midpoints", h_med
    slope = sum((x - mk) * (y - mm) for x, y in zip(k, sm)) / skk
    icpt = mm - slope * mk
    inside = sum(1 for x, i in zip(k, sel) if ch[i][0] - 0.0005 <= icpt + slope * x <= ch[i][1] + 0.0005)
    if inside < 0.9 * n:
        return out_mid, "midpoints", h_med
    # Each change at the one lattice point inside its bracket; one with none, or with more
    # than one (a read held up for more than a period: which update it saw is not known),
    # is dropped, which only joins two of the counter's intervals.
    out, res = [], []
    for (lo, hi, e), m in zip(ch, mids):
        k_hi = math.floor((hi + 0.0005 - icpt) / slope)
        f = icpt + slope * k_hi
        if f >= lo - 0.0005 and icpt + slope * (k_hi - 1) < lo - 0.0005:
            out.append((f, e / 1000.0))
            res.append(abs(f - m))
    res.sort()
    return out, "lattice", min(h_med, res[int(0.9 * (len(res) - 1))] + 0.0005)


def mean_power(pts, ok):
    """The counter's mean power over its intervals [t_k, t_k+1] for which ok(a, b), their
    total length, and the standard error of the mean (intervals weighted by length)."""
    e = l = 0.0
    ps = []
    for (a, ea), (b, eb) in zip(pts, pts[1:]):
        if b > a and ok(a, b):
            e += eb - ea
            l += b - a
            ps.append(((eb - ea) / (b - a), b - a))
    if l <= 0:
        return None, 0.0, None
    m = e / l
    se = None
    if len(ps) >= 3:
        w = sum(x for _, x in ps)
        var = sum(x * x * (p - m) ** 2 for p, x in ps) / (w * w) * len(ps) / (len(ps) - 1)
        se = math.sqrt(var)
    return m, l, se


def idle_line(pts, ok, at):
    """A line (weighted by length) through the counter's mean power over its intervals for
    which ok(a, b), against their middles' times: its value at `at`, the total length, the
    value's standard error (None with fewer than 4 intervals) and the intervals."""
    iv = [((a + b) / 2, (eb - ea) / (b - a), b - a) for (a, ea), (b, eb) in zip(pts, pts[1:]) if b > a and ok(a, b)]
    if not iv:
        return None, 0.0, None, 0
    w = sum(x for _, _, x in iv)
    tm = sum(t * x for t, _, x in iv) / w
    pm = sum(p * x for _, p, x in iv) / w
    stt = sum(x * (t - tm) ** 2 for t, _, x in iv)
    if len(iv) < 4 or stt <= 0:
        return pm, w, None, len(iv)
    beta = sum(x * (t - tm) * (p - pm) for t, p, x in iv) / stt
    res = [p - pm - beta * (t - tm) for t, p, _ in iv]
    # residual variance per unit weight, with the line's two parameters taken out
    s2 = sum(x * r * r for (_, _, x), r in zip(iv, res)) / w * len(iv) / (len(iv) - 2)
    se = math.sqrt(s2 * (1.0 / len(iv) + ((at - tm) ** 2) * (w / len(iv)) / stt))
    return pm + beta * (at - tm), w, se, len(iv)


def reference(raw):
    pts, how, dt = change_times(raw.get("changes") or [])
    spans = raw.get("spans") or []
    out = {"change_times": how, "change_time_uncertainty_s": dt, "counter_changes": len(pts),
           "counter_reads": raw.get("counter_reads")}
    if len(pts) < 5 or len(spans) < 2:
        out["error"] = "too few counter changes (%d) or calls (%d)" % (len(pts), len(spans))
        return out
    # gpuwatt's warm-up (with a binary that has no --warmup 0): the leading repetitions run
    # back to back, less than 0.1 s apart; the run starts after them
    warm = 0
    while warm + 1 < len(spans) and spans[warm + 1][0] - spans[warm][1] < 0.1:
        warm += 1
    if warm:
        warm += 1
        out["warmup_left_out"] = warm
        spans = spans[warm:]
    first, last = spans[0][0], spans[-1][1]
    after_warm = raw["spans"][warm - 1][1] + 0.08 if warm else None
    before = [t for t, _ in pts if t <= first - 0.005 and (after_warm is None or t >= after_warm)]
    after = [t for t, _ in pts if t >= last + 0.3]
    if not before or not after:
        out["error"] = "no counter change before the first call or 0.3 s after the last"
        return out
    A, B = before[-1], after[0]
    E = dict(pts)
    e_run = E[B] - E[A]
    calls = sum(m for _, _, m in spans)
    busy = sum(e - s for s, e, _ in spans)
    ends = [e for _, e, _ in spans]
    starts = [s for s, _, _ in spans]

    def in_gap(a, b):
        # no call's [start, end + GAP_AFTER] meets [a, b]
        for s, e in zip(starts, ends):
            if s < b and e + GAP_AFTER > a:
                return False
        return True

    p_in, l_in, se_in, n_in = idle_line(pts, lambda a, b: A <= a and b <= B and in_gap(a, b), (A + B) / 2)
    i0 = (raw.get("idle_before") or [None])[0]
    w0 = raw["spans"][0][0] if warm else None
    p_bef, l_bef, se_bef = mean_power(pts, lambda a, b: b <= A and (i0 is None or a >= i0 + 0.3) and (w0 is None or b <= w0))
    # the idle after gpuwatt's run: before the replay where the worker ran one
    ia = raw.get("replay_idle_before") or raw.get("idle_after") or [None, None]
    p_aft, l_aft, se_aft = mean_power(pts, lambda a, b: a >= B and (ia[1] is None or b <= ia[1]))
    p_lin = None
    if p_bef is not None and p_aft is not None:
        # the idle levels before and after, at the middles of their stretches, drawn as a line
        mb = (max(i0 + 0.3, pts[0][0]) + A) / 2 if i0 is not None else A
        ma = (B + (ia[1] if ia[1] is not None else B)) / 2
        x = (A + B) / 2
        p_lin = p_bef + (p_aft - p_bef) * (x - mb) / (ma - mb) if ma > mb else (p_bef + p_aft) / 2
    # The board's idle is the level before and after the run (a line between: the chip warms
    # as it goes). The counter's intervals in the gaps are not it: on an H200 the power dips
    # 3-6 W below idle for ~150 ms after each call (results/nvidia-h200/2026-11-28-call-2),
    # and the gaps are ~190 ms; that dip is the call's doing and belongs to its energy. The
    # in-run level is kept as a figure beside it (and used only where there is no line).
    use, idle = ("linear", p_lin) if p_lin is not None else ("in_run", p_in)
    out.update({"run_from": A, "run_to": B, "run_s": B - A, "run_j": e_run, "calls": calls, "repetitions": len(spans),
                "seconds_per_call": busy / calls,
                "idle_in_run_w": p_in, "idle_in_run_s": l_in, "idle_in_run_se_w": se_in, "idle_in_run_intervals": n_in,
                "idle_before_w": p_bef, "idle_before_s": l_bef, "idle_after_w": p_aft, "idle_after_s": l_aft,
                "idle_linear_w": p_lin, "idle_used": use, "idle_w": idle})
    if idle is None:
        out["error"] = "no idle level"
        return out
    act = (e_run - idle * (B - A)) / calls
    out["active_per_call_j"] = act
    out["energy_per_call_j"] = act + idle * busy / calls
    if p_lin is not None:
        out["active_per_call_linear_j"] = (e_run - p_lin * (B - A)) / calls
    if p_in is not None:
        out["active_per_call_in_run_j"] = (e_run - p_in * (B - A)) / calls
    # 95 %: the change times at A and B (uniform within ±dt: sd dt/√3 each), and the idle
    # level: the line between before and after may be off by half their difference where the
    # warming was not linear (a bound, taken as ±2 sd), or the in-run line's standard error.
    parts = [idle * dt / math.sqrt(3) * math.sqrt(2)]
    if use == "linear":
        parts.append(abs(p_aft - p_bef) / 2 / 1.96 * (B - A))
        # the two levels' own standard errors (the idle wobbles: a 2 s stretch has ~20 of
        # the counter's intervals), carried to the line at the run's middle
        if se_bef is not None and se_aft is not None:
            parts.append(math.sqrt(se_bef ** 2 + se_aft ** 2) / 2 * (B - A))
    elif se_in is not None:
        parts.append(se_in * (B - A))
    hw = 1.96 * math.sqrt(sum(x * x for x in parts)) / calls
    out["active_half_width_j"] = hw
    out["active_rel_half_width"] = hw / abs(act) if act else None
    st = raw.get("steady")
    if st:
        p_st, _, _ = mean_power(pts, lambda a, b: st["t0"] + 1.0 <= a and b <= st["t1"])
        if p_st is not None:
            t = (st["t1"] - st["t0"]) / st["calls"]
            out["steady"] = {"w": p_st, "seconds_per_call": t, "energy_per_call_j": p_st * t,
                             "active_per_call_j": (p_st - p_bef) * t if p_bef is not None else None}
    return out


def replay_reference(raw):
    """The reference of the replay (call_worker.py --replay): the calls run again after gpuwatt
    had finished, with gpuwatt's own waits between them, read by the counter alone, over >= 10 s:
    the counter's increase over the replay less the active idle before and after it (the
    worker's --idle s on either side), per call, as reference() does for gpuwatt's run."""
    rb = raw.get("replay_idle_before") or [None]
    ch = raw.get("changes") or []
    if rb[0] is not None:
        # from the poller's resumption on: one stretch of regular reads, where a lattice fits
        ch = [c for c in ch if c[0] >= rb[0]]
    sub = {"changes": ch, "spans": raw.get("replay_spans") or [],
           "idle_before": raw.get("replay_idle_before"), "idle_after": raw.get("idle_after")}
    return reference(sub)


def summary(r):
    if r.get("error"):
        return "no reference: " + r["error"]
    s = "%.5g J per call above active idle ± %.2f %% (%d calls in %d repetitions over %.2f s; idle %.2f W %s" % (
        r["active_per_call_j"], 100 * (r.get("active_rel_half_width") or 0), r["calls"], r["repetitions"], r["run_s"],
        r["idle_w"], r["idle_used"])
    if r.get("idle_in_run_w") is not None:
        s += "; in the run %.2f W over %.2f s" % (r["idle_in_run_w"], r["idle_in_run_s"])
    if r.get("idle_linear_w") is not None:
        s += "; before %.2f, after %.2f W" % (r["idle_before_w"], r["idle_after_w"])
    return s + "; counter times: %s ±%.1f ms)" % (r["change_times"], 1e3 * r["change_time_uncertainty_s"])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: call_reference.py REF.json")
    with open(sys.argv[1]) as f:
        raw = json.load(f)
    r = reference(raw)
    print(json.dumps(r, indent=1))
    print(summary(r), file=sys.stderr)


if __name__ == "__main__":
    main()
