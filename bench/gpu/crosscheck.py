#!/usr/bin/env python3
"""Compare gpuwatt's region energies with an independent log of NVML's energy counter.

    python3 bench/gpu/crosscheck.py MEASURE_DIR POLLER_CSV BURSTS_JSONL
        [--gpuwatt .gpu/gpuwatt] [--gpu 0] [--pad 0.15] [--sensor SPEC] [--channels LIST]
        [--out DIR] [--jobs N]

MEASURE_DIR is `gpuwatt measure --out DIR`'s directory (trace.json, trace.csv), POLLER_CSV
bench/gpu/energy_poller.py's log (t_before_unix_s,t_after_unix_s,energy_mj; or two columns
t_unix_s,energy_mj), BURSTS_JSONL bench/load/bursts.py's bursts (name, start_unix_s,
end_unix_s; length_s where given).

For each burst, a reference window aligned to the counter's own updates: from the last
counter change at or before (start - pad) to the first change at or after (end + pad). A
change is where the logged value differs from the one before; its instant is placed midway
between the two readings' calls (the counter updated after the first and before the
second), so the window's edges are update instants, known to half that gap. The reference
energy is the counter's increase between the two changes: exact up to the counter's
resolution (1 mJ) and the edges' timing (the gap at each edge times the power there, both
recorded). The pad puts both edges in the idle gap, where a delay of the counter's
publication shifts both edges alike and changes nothing.

The window is mapped to the trace's t_s axis through trace.json's "start" (the wall-clock
time of t_s = 0, as `measure` writes it), and for every board power channel of the trace
(power.samples, power.usage, power.average, power.instant, power: those present) gpuwatt
is asked

    gpuwatt energy --trace MEASURE_DIR --from Xs --to Ys --channel C --gpu G --json --method inversion

whose energy_j, energy_low_j and energy_high_j are then the channel's own sensor-model
inversion and its 95 % interval (relative: without the board's gain error, which the counter
shares), uncertainty.absolute_low_j/high_j the interval with it, and energy_raw_j the
readings integrated as recorded. Where
the binary has no --method flag (older than the flag), the corrected figure is
channel_energy_j and no interval is reported (energy_low_j/high_j belong to the estimator's
method, which may be the counter itself): the output says so. gpuwatt's default estimate
(no --channel, no --method: the counter or the ring calibrated to it) is compared too, as
the channel "default".

Prints Markdown (per burst; per channel and length; per channel and class of length: >= 0.5 s,
0.2-0.5 s, < 0.2 s, with the largest |error| and the share of bursts whose reference lies in
the interval) and writes crosscheck.json and crosscheck.md to --out (default: MEASURE_DIR's
parent). Standard library only. Exit status 2 on bad input.
"""
import argparse
import bisect
import calendar
import concurrent.futures
import csv
import json
import math
import os
import re
import subprocess
import sys

BOARD_CHANNELS = ["power.samples", "power.instant", "power.usage", "power.average", "power"]
DEFAULT = "default"  # gpuwatt's own estimate (the counter or the calibrated ring)
NAMED = "named:"  # a channel asked for by name alone (--channel C, no --method): its headline figure
COUNTER_QUANTUM_J = 0.001  # the NVML counter counts mJ
CLASSES = [(">= 0.5 s", 0.5, math.inf), ("0.2-0.5 s", 0.2, 0.5), ("< 0.2 s", 0.0, 0.2)]


class InputError(Exception):
    """Bad input: a file missing or malformed. Exit status 2."""


# ---------------------------------------------------------------------------------------
# Inputs


def parse_rfc3339(s):
    """Unix seconds of an RFC 3339 time as Go writes it (any number of fraction digits)."""
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", s.strip())
    if not m:
        raise InputError(f"not an RFC 3339 time: {s!r}")
    y, mo, d, h, mi, se = (int(m.group(i)) for i in range(1, 7))
    t = calendar.timegm((y, mo, d, h, mi, se, 0, 0, 0))
    if m.group(7):
        t += float("0" + m.group(7))
    z = m.group(8)
    if z != "Z":
        sign = 1 if z[0] == "+" else -1
        t -= sign * (int(z[1:3]) * 3600 + int(z[4:6]) * 60)
    return t


def load_trace_meta(measure_dir):
    path = os.path.join(measure_dir, "trace.json")
    try:
        with open(path) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: {e}")
    if "start" not in meta:
        raise InputError(f"{path}: no \"start\" (the wall-clock time of t_s = 0)")
    return meta


def load_poller(path):
    """Readings of the counter, in order: (t_lo, t_hi, mJ) with the call's wall-clock bounds."""
    rows = []
    try:
        with open(path, newline="") as f:
            r = csv.reader(f)
            head = next(r, None)
            if head is None:
                raise InputError(f"{path}: empty")
            head = [h.strip() for h in head]
            if head[:3] == ["t_before_unix_s", "t_after_unix_s", "energy_mj"]:
                three = True
            elif head[:2] == ["t_unix_s", "energy_mj"]:
                three = False
            else:
                raise InputError(f"{path}: header {','.join(head)!r}: want t_before_unix_s,t_after_unix_s,energy_mj "
                                 "or t_unix_s,energy_mj")
            for n, row in enumerate(r, 2):
                if not row:
                    continue
                try:
                    if three:
                        lo, hi, mj = float(row[0]), float(row[1]), float(row[2])
                    else:
                        lo = hi = float(row[0])
                        mj = float(row[1])
                except (ValueError, IndexError):
                    raise InputError(f"{path}:{n}: not a reading: {','.join(row)!r}")
                if hi < lo or (rows and lo < rows[-1][0]):
                    raise InputError(f"{path}:{n}: times out of order")
                rows.append((lo, hi, mj))
    except OSError as e:
        raise InputError(f"{path}: {e}")
    if len(rows) < 2:
        raise InputError(f"{path}: {len(rows)} readings: want at least 2")
    return rows


def load_bursts(path):
    out = []
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    b = json.loads(line)
                    s, e = float(b["start_unix_s"]), float(b["end_unix_s"])
                except (ValueError, KeyError, TypeError) as err:
                    raise InputError(f"{path}:{n}: not a burst (want name, start_unix_s, end_unix_s): {err}")
                if not e > s:
                    raise InputError(f"{path}:{n}: end_unix_s {e} is not after start_unix_s {s}")
                pad = b.get("pad_s")
                if pad is not None and not (isinstance(pad, (int, float)) and pad >= 0):
                    raise InputError(f"{path}:{n}: pad_s {pad!r}: want a number >= 0")
                out.append({"name": str(b.get("name", f"burst-{n}")), "start": s, "end": e,
                            "length_s": float(b.get("length_s", e - s)), "gpu_uuid": b.get("gpu_uuid", ""),
                            "shape": str(b.get("shape", "")), "pad": pad})
    except OSError as e:
        raise InputError(f"{path}: {e}")
    if not out:
        raise InputError(f"{path}: no bursts")
    return out


# ---------------------------------------------------------------------------------------
# The counter's changes and the reference windows


def changes(readings):
    """The counter's updates seen in the readings: for each reading whose value differs from
    the one before, a dict with t (the instant, midway between the two calls' midpoints), t_lo
    and t_hi (the earliest and latest the update can have been: the start of the call before
    and the end of this one), mj (the new value) and i (the reading's index). The first
    reading is not a change (when it was published is unknown)."""
    out = []
    for i in range(1, len(readings)):
        p, c = readings[i - 1], readings[i]
        if c[2] == p[2]:
            continue
        if c[2] < p[2]:
            raise InputError(f"the counter went back from {p[2]} to {c[2]} mJ at {c[0]:.6f}")
        mid_p, mid_c = (p[0] + p[1]) / 2, (c[0] + c[1]) / 2
        out.append({"t": (mid_p + mid_c) / 2, "t_lo": p[0], "t_hi": c[1], "mj": c[2], "i": i})
    return out


def counter_resolution(readings, chs):
    """What limits the reference: the counter's quantum, its update period (median gap between
    changes), and the readings' spacing (median and largest gap between calls)."""
    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if xs else float("nan")
    steps = [b["t"] - a["t"] for a, b in zip(chs, chs[1:])]
    gaps = [b[0] - a[0] for a, b in zip(readings, readings[1:])]
    calls = [r[1] - r[0] for r in readings]
    incs = [b["mj"] - a["mj"] for a, b in zip(chs, chs[1:])]
    return {
        "quantum_j": COUNTER_QUANTUM_J,
        "smallest_step_j": min(incs) / 1000 if incs else None,
        "update_period_s": median(steps),
        "poll_interval_s": median(gaps),
        "poll_interval_max_s": max(gaps) if gaps else None,
        "call_s": median(calls),
        "readings": len(readings),
        "changes": len(chs),
    }


def window(chs, start, end, pad):
    """The reference window of a burst over [start, end]: the last change at or before
    start - pad and the first at or after end + pad, or None with the reason."""
    ts = [c["t"] for c in chs]
    i = bisect.bisect_right(ts, start - pad) - 1
    j = bisect.bisect_left(ts, end + pad)
    if i < 0:
        return None, f"no counter change at or before {start - pad:.3f} (the log starts too late)"
    if j >= len(chs):
        return None, f"no counter change at or after {end + pad:.3f} (the log stops too early)"
    return (chs[i], chs[j]), ""


def edge_power_w(chs, k):
    """The counter's mean power over the update steps either side of change k (W)."""
    lo, hi = max(k - 1, 0), min(k + 1, len(chs) - 1)
    if hi == lo:
        return float("nan")
    return (chs[hi]["mj"] - chs[lo]["mj"]) / 1000 / (chs[hi]["t"] - chs[lo]["t"])


def reference(chs, a, b):
    """The reference energy between changes a and b (dicts of chs), with its uncertainty: the
    counter's quantum at each end plus, at each edge, the power there times half the span
    within which the update happened."""
    ka, kb = chs.index(a), chs.index(b)
    e = (b["mj"] - a["mj"]) / 1000
    u_edges = 0.0
    for k, c in ((ka, a), (kb, b)):
        p = edge_power_w(chs, k)
        if math.isfinite(p):
            u_edges += p * (c["t_hi"] - c["t_lo"]) / 2
    return {"energy_j": e, "uncertainty_j": 2 * COUNTER_QUANTUM_J + u_edges,
            "edge_power_w": [edge_power_w(chs, ka), edge_power_w(chs, kb)]}


CLOCK_TOLERANCE_S = 0.05


def clock_check(chs, trace_counter, t0):
    """Whether the trace's axis maps onto the wall clock as assumed. gpuwatt stamps each new
    counter value it reads with its estimate of the update's instant (midway between its two
    calls, or half an update period back when it reads more slowly than the counter
    updates), so each counter reading of the trace (t on its axis, value in J), at t0 + t,
    should lie within about half a period of the instant the poller saw that value appear.
    Returns the readings matched, the median and the range of those differences (s, trace
    minus poller), and ok: the median within CLOCK_TOLERANCE_S. A shift that small moves
    only the idle ends of a window (0.15 s of idle pad each side), not the burst."""
    by_mj = {c["mj"]: k for k, c in enumerate(chs)}
    d = sorted(t0 + t - chs[by_mj[round(v * 1000)]]["t"] for t, v in trace_counter if round(v * 1000) in by_mj)
    if not d:
        return {"checked": 0, "median_s": None, "min_s": None, "max_s": None, "ok": None}
    med = d[len(d) // 2] if len(d) % 2 else (d[len(d) // 2 - 1] + d[len(d) // 2]) / 2
    return {"checked": len(d), "median_s": med, "min_s": d[0], "max_s": d[-1], "ok": abs(med) <= CLOCK_TOLERANCE_S}


def trace_counter_readings(measure_dir, gpu):
    out = []
    path = os.path.join(measure_dir, "trace.csv")
    try:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r.get("channel") == "energy.total" and int(r.get("gpu") or 0) == gpu:
                    out.append((float(r["t_s"]), float(r["value"])))
    except (OSError, ValueError, KeyError):
        return []
    return out


# ---------------------------------------------------------------------------------------
# gpuwatt energy


def supports_method(gpuwatt):
    """Whether the binary's energy verb has --method (forcing the channel's inversion)."""
    try:
        p = subprocess.run(gpuwatt + ["energy", "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return re.search(r"^\s*-{1,2}method\b", p.stdout + p.stderr, re.M) is not None


def run_energy(gpuwatt, measure_dir, frm, to, channel, gpu, method, sensor):
    """One `gpuwatt energy --json`: the parsed report, or {"error": ...}."""
    args = gpuwatt + ["energy", "--trace", measure_dir, "--from", f"{frm:.6f}s", "--to", f"{to:.6f}s",
                      "--gpu", str(gpu), "--json"]
    if channel.startswith(NAMED):
        args += ["--channel", channel[len(NAMED):]]
        if sensor:
            args += ["--sensor", sensor]
    elif channel != DEFAULT:
        args += ["--channel", channel]
        if method:
            args += ["--method", "inversion"]
        if sensor:
            args += ["--sensor", sensor]
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e), "argv": args}
    if p.returncode != 0:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()}", "argv": args}
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        return {"error": f"not JSON: {e}", "argv": args}


def figure(rep, channel, method):
    """What the comparison takes from a report: the corrected energy, its interval (or None),
    the raw integral, and the estimator's method."""
    m = rep.get("energy_method", "")
    if channel.startswith(NAMED):
        # The headline of `energy --channel C`: the channel's own figure and interval where the
        # binary gives it (issue 28), else whatever it chose (the source says which).
        u = rep.get("uncertainty") or {}
        return {"energy_j": rep["energy_j"], "low_j": rep.get("energy_low_j"), "high_j": rep.get("energy_high_j"),
                "raw_j": rep.get("energy_raw_j"), "method": m, "source": rep.get("energy_source", ""),
                "absolute_low_j": u.get("absolute_low_j"), "absolute_high_j": u.get("absolute_high_j"),
                "interval_partial": u.get("partial"),
                "components": {c["name"]: (c["half_width_j"] if c.get("known", True) else None)
                               for c in u.get("components", [])}}
    if channel == DEFAULT:
        return {"energy_j": rep["energy_j"], "low_j": rep.get("energy_low_j"), "high_j": rep.get("energy_high_j"),
                "raw_j": None, "method": m, "source": rep.get("energy_source", "")}
    u = rep.get("uncertainty") or {}
    if method and m == "inversion":
        lo, hi = rep.get("energy_low_j"), rep.get("energy_high_j")
        alo, ahi = u.get("absolute_low_j"), u.get("absolute_high_j")
        e = rep["energy_j"]
    else:
        # Without --method the interval is the estimator's (maybe the counter's own): not the channel's.
        lo = hi = alo = ahi = None
        e = rep.get("channel_energy_j", rep["energy_j"])
    return {"energy_j": e, "low_j": lo, "high_j": hi, "raw_j": rep.get("energy_raw_j"), "method": m,
            "source": rep.get("energy_source", ""), "absolute_low_j": alo, "absolute_high_j": ahi,
            "interval_partial": u.get("partial", rep.get("energy_interval_partial")) if lo is not None else None,
            "components": {c["name"]: (c["half_width_j"] if c.get("known", True) else None)
                           for c in u.get("components", [])} if lo is not None else None}


def compare(ref_j, fig, ref_u_j=0.0):
    """Error of a figure against the reference, and whether the reference is in its interval
    (inside; and inside_with_reference_uncertainty, the interval widened by ref_u_j)."""
    row = dict(fig)
    row["error_pct"] = 100 * (fig["energy_j"] - ref_j) / ref_j
    row["raw_error_pct"] = 100 * (fig["raw_j"] - ref_j) / ref_j if fig.get("raw_j") is not None else None
    if fig.get("low_j") is not None and fig.get("high_j") is not None:
        row["inside"] = fig["low_j"] <= ref_j <= fig["high_j"]
        # The same, with the reference's own uncertainty added to the interval's.
        row["inside_with_reference_uncertainty"] = fig["low_j"] - ref_u_j <= ref_j <= fig["high_j"] + ref_u_j
        row["half_width_pct"] = 100 * (fig["high_j"] - fig["low_j"]) / 2 / ref_j
    else:
        row["inside"] = row["inside_with_reference_uncertainty"] = None
        row["half_width_pct"] = None
    # The interval with the board's gain error (uncertainty.absolute_*): what a comparison with
    # another meter would need; against the board's own counter the relative one should do.
    if fig.get("absolute_low_j") is not None and fig.get("absolute_high_j") is not None:
        row["inside_absolute"] = fig["absolute_low_j"] <= ref_j <= fig["absolute_high_j"]
    else:
        row["inside_absolute"] = None
    return row


def length_class(L):
    for name, lo, hi in CLASSES:
        if lo <= L + 1e-9 < hi:
            return name
    return CLASSES[-1][0]


def summarise(rows):
    """Per channel and length, and per channel and class: n, mean error, max |error|, the
    share inside the interval, max |raw error|."""
    def agg(rs):
        errs = [r["error_pct"] for r in rs]
        raws = [abs(r["raw_error_pct"]) for r in rs if r.get("raw_error_pct") is not None]
        ins = [r["inside"] for r in rs if r.get("inside") is not None]
        ins_abs = [r["inside_absolute"] for r in rs if r.get("inside_absolute") is not None]
        hws = sorted(r["half_width_pct"] for r in rs if r.get("half_width_pct") is not None)
        return {"n": len(rs), "mean_error_pct": sum(errs) / len(errs), "max_abs_error_pct": max(abs(e) for e in errs),
                "inside": sum(ins), "with_interval": len(ins),
                "coverage": sum(ins) / len(ins) if ins else None,
                "inside_absolute": sum(ins_abs), "with_absolute_interval": len(ins_abs),
                "median_half_width_pct": hws[len(hws) // 2] if hws else None,
                "max_abs_raw_error_pct": max(raws) if raws else None}
    by_len, by_class = {}, {}
    for r in rows:
        if "error_pct" not in r:
            continue
        by_len.setdefault((r["channel"], r["length_s"]), []).append(r)
        by_class.setdefault((r["channel"], length_class(r["length_s"])), []).append(r)
    return ({k: agg(v) for k, v in by_len.items()}, {k: agg(v) for k, v in by_class.items()})


# ---------------------------------------------------------------------------------------
# Markdown


def fmt(x, f="{:.1f}", none="–"):
    return none if x is None or (isinstance(x, float) and not math.isfinite(x)) else f.format(x)


def channel_rank(c):
    named = c.startswith(NAMED)
    base = c[len(NAMED):] if named else c
    return (c == DEFAULT, named, BOARD_CHANNELS.index(base) if base in BOARD_CHANNELS else 99, c)


def channel_order(chs):
    return sorted(chs, key=channel_rank)


def markdown(res):
    out = []
    w = out.append
    res_c = res["counter"]
    w(f"Reference: NVML's energy counter logged by an independent poller ({res_c['readings']} calls, "
      f"{res_c['changes']} updates; update period {fmt(1e3 * res_c['update_period_s'], '{:.1f}')} ms, "
      f"calls every {fmt(1e3 * res_c['poll_interval_s'], '{:.2f}')} ms (at most "
      f"{fmt(1e3 * (res_c['poll_interval_max_s'] or float('nan')), '{:.1f}')} ms), quantum 1 mJ). "
      f"Windows from the last counter update at or before each burst's start − {res['pad_s']:g} s to the first "
      f"at or after its end + {res['pad_s']:g} s; the reference's own uncertainty (quantum and the edges' timing) "
      f"is at most {fmt(res['max_reference_uncertainty_pct'], '{:.3f}')} % of it.")
    w("")
    cc = res["clock_check"]
    if cc["checked"]:
        line = (f"Clock check: the {cc['checked']} counter readings of the trace lie {1e3 * cc['median_s']:+.1f} ms "
                f"(median; {1e3 * cc['min_s']:+.1f} to {1e3 * cc['max_s']:+.1f} ms) from where the poller saw the same "
                f"values appear")
        if cc["ok"]:
            line += f": the trace's start maps its axis onto the wall clock (within {1e3 * CLOCK_TOLERANCE_S:.0f} ms)."
        else:
            line += (f": **the trace's clock is off** by more than {1e3 * CLOCK_TOLERANCE_S:.0f} ms, and the windows are "
                     "placed on the trace by trace.json's start.")
        w(line)
    else:
        w("Clock check: none (no counter reading of the trace has a value the poller logged).")
    w("")
    if not res["method_flag"]:
        w("**Note**: this gpuwatt's `energy` has no `--method` flag: the corrected figure is `channel_energy_j` "
          "(the channel's inversion) and no channel interval is shown.")
        w("")
    for note in res["notes"]:
        w(f"**Note**: {note}")
        w("")
    w("### Each burst")
    w("")
    w("| burst | length | window | reference | channel | corrected | error | 95 % interval | inside | raw | raw error |")
    w("|---|---:|---:|---:|---|---:|---:|---:|:---:|---:|---:|")
    for r in res["rows"]:
        ref = f"{r['reference_j']:.2f} ± {r['reference_uncertainty_j']:.2f} J" if r.get("reference_j") is not None else "–"
        win = f"{r['window_to_s'] - r['window_from_s']:.3f} s" if r.get("window_from_s") is not None else "–"
        if "error_pct" not in r:
            w(f"| {r['burst']} | {r['length_s']:g} s | {win} | {ref} | {r['channel']} | {r.get('error', '')} | | | | | |")
            continue
        iv = (f"{r['low_j']:.2f} – {r['high_j']:.2f} J" if r.get("low_j") is not None else "–")
        ins = {True: "yes", False: "**no**", None: "–"}[r["inside"]]
        w(f"| {r['burst']} | {r['length_s']:g} s | {win} | {ref} | {r['channel']} | {r['energy_j']:.2f} J | "
          f"{r['error_pct']:+.2f} % | {iv} | {ins} | {fmt(r.get('raw_j'), '{:.2f} J')} | "
          f"{fmt(r.get('raw_error_pct'), '{:+.1f} %')} |")
    w("")
    w("### By channel and burst length")
    w("")
    w("| channel | length | bursts | mean error | max \\|error\\| | reference inside | median half-width | max \\|raw error\\| |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|")
    by_len = {(s["channel"], s["length_s"]): s for s in res["by_length"]}
    for ch in channel_order({c for c, _ in by_len}):
        for L in sorted({L for c, L in by_len if c == ch}):
            s = by_len[(ch, L)]
            w(f"| {ch} | {L:g} s | {s['n']} | {s['mean_error_pct']:+.2f} % | {s['max_abs_error_pct']:.2f} % | "
              f"{inside_text(s)} | {fmt(s['median_half_width_pct'], '{:.2f} %')} | {fmt(s['max_abs_raw_error_pct'], '{:.1f} %')} |")
    w("")
    w("### Summary: by channel and class of length")
    w("")
    w("| channel | class | bursts | max \\|error\\| | coverage of the interval | median half-width | "
      "coverage with the gain error | max \\|raw error\\| |")
    w("|---|---|---:|---:|---:|---:|---:|---:|")
    by_class = {(s["channel"], s["class"]): s for s in res["by_class"]}
    for ch in channel_order({c for c, _ in by_class}):
        for name, _, _ in CLASSES:
            s = by_class.get((ch, name))
            if s is None:
                continue
            w(f"| {ch} | {name} | {s['n']} | {s['max_abs_error_pct']:.2f} % | {inside_text(s)} | "
              f"{fmt(s['median_half_width_pct'], '{:.2f} %')} | {inside_text(s, True)} | "
              f"{fmt(s['max_abs_raw_error_pct'], '{:.1f} %')} |")
    w("")
    return "\n".join(out)


def inside_text(s, absolute=False):
    k, n = (s["inside_absolute"], s["with_absolute_interval"]) if absolute else (s["inside"], s["with_interval"])
    if not n:
        return "–"
    return f"{k}/{n} ({100 * k / n:.0f} %)"


# ---------------------------------------------------------------------------------------


def crosscheck(measure_dir, poller_csv, bursts_jsonl, gpuwatt, gpu=0, pad=0.15, sensor="", channels=None,
               jobs=4, energy=None, method=None, named=False):
    """The whole comparison as a dict (crosscheck.json). energy(frm, to, channel, method) runs
    gpuwatt energy (run_energy by default); method None asks the binary whether it has --method.
    named: each channel also by name alone ("named:C": `energy --channel C`, its headline). A
    burst's own pad ("pad_s" in the JSON lines; 0 for a window inside a load) replaces pad."""
    meta = load_trace_meta(measure_dir)
    t0 = parse_rfc3339(meta["start"])
    readings = load_poller(poller_csv)
    bursts = load_bursts(bursts_jsonl)
    chs = changes(readings)
    if len(chs) < 2:
        raise InputError(f"{poller_csv}: the counter changed {len(chs)} times: want at least 2")
    notes = []
    if method is None:
        method = supports_method(gpuwatt)
    if energy is None:
        def energy(frm, to, ch, m):
            return run_energy(gpuwatt, measure_dir, frm, to, ch, gpu, m, sensor)
    have = [c["name"] for c in meta.get("channels", []) if c.get("gpu", 0) == gpu]
    board = [c for c in BOARD_CHANNELS if c in have]
    if channels:
        missing = [c for c in channels if c not in have]
        if missing:
            raise InputError(f"--channels: {', '.join(missing)} not in the trace (it has {', '.join(board)})")
        board = list(channels)
    if not board:
        raise InputError(f"{measure_dir}: GPU {gpu} has no board power channel ({', '.join(BOARD_CHANNELS)})")
    uuid = next((g.get("uuid", "") for g in meta.get("gpus", []) if g.get("index", 0) == gpu), "")
    poller_meta = {}
    try:
        with open(poller_csv + ".meta.json") as f:
            poller_meta = json.load(f)
    except (OSError, ValueError):
        pass
    for who, u in [("the poller", poller_meta.get("uuid", ""))] + [("the bursts", b["gpu_uuid"]) for b in bursts[:1]]:
        if u and uuid and u != uuid:
            notes.append(f"{who} ran on {u}, the trace's GPU {gpu} is {uuid}: the comparison is not of one GPU")

    tasks, rows = [], []
    lo_trace, hi_trace = -math.inf, math.inf
    if "duration_s" in meta:
        hi_trace = meta["duration_s"]
    for b in bursts:
        base = {"burst": b["name"], "length_s": b["length_s"], "start_unix_s": b["start"], "end_unix_s": b["end"],
                "burst_from_s": b["start"] - t0, "burst_to_s": b["end"] - t0}
        if b.get("shape"):
            base["shape"] = b["shape"]
        bpad = pad if b.get("pad") is None else b["pad"]
        win, why = window(chs, b["start"], b["end"], bpad)
        if win is None:
            rows.append(dict(base, channel="(all)", error=why))
            continue
        a, z = win
        ref = reference(chs, a, z)
        frm, to = a["t"] - t0, z["t"] - t0
        base.update(window_from_s=frm, window_to_s=to, window_from_unix_s=a["t"], window_to_unix_s=z["t"],
                    reference_j=ref["energy_j"], reference_uncertainty_j=ref["uncertainty_j"],
                    edge_power_w=ref["edge_power_w"])
        if frm < lo_trace or to > hi_trace:
            rows.append(dict(base, channel="(all)", error=f"the window {frm:.3f} s to {to:.3f} s lies outside the trace"))
            continue
        for ch in board + [DEFAULT] + ([NAMED + c for c in board] if named else []):
            tasks.append((base, ch))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        reps = list(ex.map(lambda t: energy(t[0]["window_from_s"], t[0]["window_to_s"], t[1], method), tasks))
    for (base, ch), rep in zip(tasks, reps):
        row = dict(base, channel=ch)
        if "error" in rep:
            row["error"] = rep["error"]
        else:
            row.update(compare(base["reference_j"], figure(rep, ch, method), base["reference_uncertainty_j"]))
        rows.append(row)
    if method and any(r.get("channel") not in (DEFAULT, None) and not r["channel"].startswith(NAMED)
                      and r.get("method") not in (None, "inversion")
                      for r in rows if "error_pct" in r):
        notes.append("some figures asked with --method inversion came from another method (see crosscheck.json)")
    rows.sort(key=lambda r: (r["start_unix_s"], channel_rank(r["channel"])))
    by_len, by_class = summarise(rows)
    refs = [r for r in rows if r.get("reference_j")]
    return {
        "measure_dir": measure_dir, "poller_csv": poller_csv, "bursts_jsonl": bursts_jsonl,
        "gpu": gpu, "gpu_uuid": uuid, "trace_start": meta["start"], "trace_start_unix_s": t0,
        "pad_s": pad, "sensor": sensor or "auto", "method_flag": method, "channels": board,
        "counter": counter_resolution(readings, chs),
        "clock_check": clock_check(chs, trace_counter_readings(measure_dir, gpu), t0),
        "max_reference_uncertainty_pct": max((100 * r["reference_uncertainty_j"] / r["reference_j"] for r in refs),
                                             default=None),
        "notes": notes,
        "rows": rows,
        "by_length": [dict(v, channel=k[0], length_s=k[1]) for k, v in sorted(by_len.items())],
        "by_class": [dict(v, channel=k[0], **{"class": k[1]}) for k, v in sorted(by_class.items())],
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("measure_dir")
    ap.add_argument("poller_csv")
    ap.add_argument("bursts_jsonl")
    ap.add_argument("--gpuwatt", default=".gpu/gpuwatt", help="the gpuwatt binary, or a command split on spaces (default .gpu/gpuwatt)")
    ap.add_argument("--gpu", type=int, default=0, help="the trace's GPU the bursts ran on (default 0)")
    ap.add_argument("--pad", type=float, default=0.15, help="seconds of idle either side of a burst (default 0.15)")
    ap.add_argument("--sensor", default="", help="passed to gpuwatt energy --sensor (default: its auto)")
    ap.add_argument("--channels", default="", help="comma separated channels (default: every board channel present)")
    ap.add_argument("--out", default="", help="directory for crosscheck.json and crosscheck.md (default: MEASURE_DIR's parent)")
    ap.add_argument("--jobs", type=int, default=4, help="gpuwatt energy runs at a time (default 4)")
    ap.add_argument("--named", action="store_true",
                    help="also each channel by name alone (energy --channel C, no --method), as named:C")
    a = ap.parse_args(argv)
    if a.pad < 0:
        ap.error("--pad: want >= 0")
    out = a.out or os.path.dirname(os.path.abspath(a.measure_dir.rstrip("/")))
    try:
        res = crosscheck(a.measure_dir, a.poller_csv, a.bursts_jsonl, a.gpuwatt.split(), a.gpu, a.pad, a.sensor,
                         [c for c in a.channels.split(",") if c], a.jobs, named=a.named)
    except InputError as e:
        print(f"crosscheck: {e}", file=sys.stderr)
        return 2
    md = markdown(res)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "crosscheck.json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    with open(os.path.join(out, "crosscheck.md"), "w") as f:
        f.write(md + "\n")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
