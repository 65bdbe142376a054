#!/usr/bin/env python3
"""The memory power channel at full DRAM bandwidth, card by card (issue 19: eps_mem 75 vs 90 pJ/B).

From recorded runs only: for the micro runs with a trace (their kernels' windows from the trace's
marks), the mean of power.memory.average over the second half of the baseline, fp32.fma and
dram.copy kernels (the 1 s average has settled there), beside the board power gpuwatt reported;
for archline runs, the copy kernel at 100 % occupancy and the baseline as archline recorded them
(memory_power_w, or from the trace where the run predates that field).
Run from the repository root: python3 results/nvidia-h200/2026-11-24-archline-repeat/memsplit.py
"""
import csv, glob, gzip, json, os, sys

R = 'results/nvidia-h200/'

def series(trace_csv, ch='power.memory.average'):
    out = []
    for row in csv.DictReader(open(trace_csv)):
        if row['channel'] == ch:
            out.append((float(row['t_s']), float(row['value'])))
    return out

def late_mean(s, a, b):
    mid = (a + b) / 2
    v = [p for t, p in s if mid <= t <= b]
    return sum(v) / len(v) if v else float('nan')

def micro_run(d):
    m = json.load(open(d + '/trace.json'))
    marks = {k['name']: k['t_s'] for k in m.get('marks') or []}
    r = json.load(open(d + '/results.json'))
    rows = {x['name']: x for x in r['rows']}
    s = series(d + '/trace.csv')
    out = {}
    for n in ('baseline', 'fp32.fma', 'dram.copy'):
        a, b = marks[n + '.start'], marks[n + '.end']
        out[n] = (rows[n]['mean_power_w'], late_mean(s, a, b))
    return r['gpu']['uuid'], out

def archline_run(res, trace_csv=None):
    s = series(trace_csv) if trace_csv else None
    def mem(p):
        if p.get('memory_power_w'):
            return p['memory_power_w']
        return late_mean(s, p['start_s'], p['end_s']) if s else float('nan')
    cp = [p for p in res['copy'] if abs(p['occupancy'] - 1) < 1e-9][0]
    base = res['baseline'][0]
    r = res['results']['fp32']
    split = r.get('memory_split') or {}
    return {'baseline': (base['power_w'], mem(base)), 'dram.copy': (cp['power_w'], mem(cp)),
            'eps_mem': (r['eps_mem_pj_per_byte'], r.get('eps_mem_pj_per_byte_ci')),
            'rail': (split.get('eps_mem_rail_pj_per_byte'), split.get('eps_mem_rail_pj_per_byte_ci'))}

rows = []
for d, kind in ((R + '2026-11-21-micro/micro', 'micro'), (R + '2026-11-23-house-smoke/micro', 'micro')):
    uuid, o = micro_run(d)
    rows.append((uuid[:12], d[len(R):], o['dram.copy'][0], o['dram.copy'][1], o['baseline'][1], '', ''))
old = json.load(open(R + '2026-11-21-archline/archline/results.json'))
o = archline_run(old, R + '2026-11-21-archline/archline/trace.csv')
rows.append((old['gpu']['uuid'][:12], '2026-11-21-archline', o['dram.copy'][0], o['dram.copy'][1], o['baseline'][1], '%.1f' % o['eps_mem'][0], ''))
for f in sorted(glob.glob(R + '2026-11-24-archline-repeat/out/repeat/run-*/results.json*')):
    op = gzip.open if f.endswith('.gz') else open
    d = json.load(op(f))
    o = archline_run(d['archline'])
    e, eci = o['eps_mem']
    rl, rci = o['rail']
    rows.append((d['gpu']['uuid'][:12], f[len(R):].split('/results')[0], o['dram.copy'][0], o['dram.copy'][1], o['baseline'][1],
                 '%.1f [%.1f, %.1f]' % (e, eci[0], eci[1]), '%.1f [%.1f, %.1f]' % (rl, rci[0], rci[1]) if rl else ''))
print('| card | run | dram.copy at 100 %: board W | memory channel W | baseline kernel: memory channel W | fp32 eps_mem pJ/B | on the memory rail pJ/B |')
print('|---|---|---:|---:|---:|---:|---:|')
for r in rows:
    print('| %s | %s | %.1f | %.1f | %.1f | %s | %s |' % r)
