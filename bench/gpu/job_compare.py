#!/usr/bin/env python3
"""Compare each job's per-GPU energy (job.json) with gpuwatt energy over the same wall-clock
span of the measure trace recorded around the job. usage: compare.py OUTDIR GPUWATT"""
import json, subprocess, sys, datetime as dt, gzip, os, shutil, tempfile
out, gw = sys.argv[1], sys.argv[2]
def t(s):  # RFC 3339 with ns -> datetime (us)
    s = s.replace('Z', '+00:00')
    if '.' in s:
        a, b = s.split('.', 1)
        frac, tz = b[:-6], b[-6:]
        s = a + '.' + frac[:6].ljust(6, '0') + tz
    return dt.datetime.fromisoformat(s)
rows = []
for j in 'ABC':
    job = json.load(open(f'{out}/jobs/gw{j}/job.json'))
    meta = json.load(open(f'{out}/measure{j}/trace.json'))
    off = (t(job['start']) - t(meta['start'])).total_seconds()
    a, b = off + job['start_s'], off + job['end_s']
    td = tempfile.mkdtemp()
    shutil.copy(f'{out}/measure{j}/trace.json', td)
    src = f'{out}/measure{j}/trace.csv'
    if os.path.exists(src + '.gz'):
        with gzip.open(src + '.gz') as f, open(td + '/trace.csv', 'wb') as g: shutil.copyfileobj(f, g)
    else:
        shutil.copy(src, td)
    r = subprocess.run([gw, 'energy', '--trace', td, '--gpu', '0', '--from', f'{a:.6f}s', '--to', f'{b:.6f}s', '--json'], capture_output=True, text=True)
    if r.returncode != 0:
        print(j, 'energy failed', r.stderr.strip()); continue
    e = json.loads(r.stdout)
    g = job['gpus'][0]
    d = 100 * (g['energy_j'] / e['energy_j'] - 1)
    overlap = not (g['energy_high_j'] < e['energy_low_j'] or e['energy_high_j'] < g['energy_low_j'])
    rows.append(dict(job=j, span_s=round(job['span_s'], 3), job_energy_j=round(g['energy_j'], 2), job_low_j=round(g['energy_low_j'], 2), job_high_j=round(g['energy_high_j'], 2),
                     job_source=g.get('method', g['source']), measure_energy_j=round(e['energy_j'], 2), measure_low_j=round(e['energy_low_j'], 2), measure_high_j=round(e['energy_high_j'], 2),
                     measure_method=e.get('energy_method', ''), measure_channel=e.get('channel', ''), measure_channel_energy_j=round(e.get('channel_energy_j', 0), 2), measure_channel_low_j=round(e.get('channel_energy_low_j', 0), 2), measure_channel_high_j=round(e.get('channel_energy_high_j', 0), 2), diff_pct=round(d, 2), intervals_overlap=overlap, incomplete=job['incomplete'],
                     from_s=round(a, 4), to_s=round(b, 4)))
json.dump(rows, open(f'{out}/compare.json', 'w'), indent=1)
for r in rows: print(r)
