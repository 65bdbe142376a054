#!/usr/bin/env python3
"""Tables like MIPP's Tables I-IV (seed 001) from a `gpuwatt micro` results.json.

    python3 bench/gpu/micro_tables.py DIR/results.json > tables.md

Every figure is gpuwatt's own (results.json); this script only lays them out as the paper
does: one column per benchmark, one row per figure.
"""
import json
import sys

r = json.load(open(sys.argv[1]))
rows = {x["name"]: x for x in r["rows"]}
p = r["props"]


def table(title, names, heads, what):
    names = [n for n in names if n in rows]
    print(f"### {title}\n")
    print("| | " + " | ".join(heads[n] for n in names) + " |")
    print("|---|" + "---:|" * len(names))
    for label, f in what:
        cells = []
        for n in names:
            try:
                v = f(rows[n])
            except (KeyError, TypeError, ZeroDivisionError):
                v = None
            cells.append("n.a." if v is None else v)
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()


def g(v, d=3):
    return f"{v:.{d}g}" if v is not None else None


arith = ["int32.add", "int32.mad", "int32.popc", "int32.shift", "int32.logic", "int32.cmp", "int64.add",
         "fp32.add", "fp32.fma", "fp32.sin", "fp32.ex2", "fp32.rsqrt", "fp64.fma", "fp16.fma", "bf16.fma"]
aheads = {"int32.add": "INT32 simple (add)", "int32.mad": "INT32 complex (mad)", "int32.popc": "INT32 pop. count",
          "int32.shift": "INT32 shift", "int32.logic": "INT32 bit op. (lop3)", "int32.cmp": "INT32 compare (min/max)",
          "int64.add": "INT64 simple (add)", "fp32.add": "FP32 simple (add)", "fp32.fma": "FP32 fma",
          "fp32.sin": "FP32 special (sin)", "fp32.ex2": "FP32 special (ex2)", "fp32.rsqrt": "FP32 special (rsqrt)",
          "fp64.fma": "FP64 fma", "fp16.fma": "FP16 fma (half2)", "bf16.fma": "BF16 fma (bf16x2)"}
common = [
    ("Execution time per launch (ms)", lambda x: g(1e3 * x["time_per_launch_s"])),
    ("SM clock (MHz)", lambda x: f"{x['sm_clock_mhz']:.0f}"),
]
power = [
    ("Avg. power (W), energy counter", lambda x: f"{x['mean_power_w']:.1f}"),
    ("Max power (W), highest 20 ms sample", lambda x: f"{x['max_power_w']:.1f}"),
    ("Energy per launch (J)", lambda x: g(x["energy_per_launch_j"])),
]
table(f"Table I-style: {p['name']}, arithmetic units ({p['sms']} SMs; idle {r['idle_power_w']:.1f} W, "
      f"pi0 {r['pi0_w']:.1f} W from the baseline kernel)", arith, aheads,
      common + [
          ("Spec throughput (ops/cycle/SM)", lambda x: f"{x['spec_per_cycle_per_sm']:.0f}" if x.get("spec_per_cycle_per_sm") else None),
          ("Real throughput (ops/cycle/SM)", lambda x: f"{x['per_cycle_per_sm']:.1f}"),
          ("Real throughput (Gop/s; flop/s counts 2 per fma)", lambda x: g((x.get("flops_per_s") or x["per_s"]) / 1e9, 4)),
      ] + power + [
          ("Energy efficiency ((MIPS/W)/SM)", lambda x: f"{x['mips_per_watt_per_sm']:.1f}"),
          ("pJ per instruction, in all", lambda x: f"{x['pj_per_unit']:.2f}"),
          ("  of which pi0 (baseline power x time)", lambda x: f"{x['pj_per_unit_pi0']:.2f}"),
          ("  of which above pi0 (the unit's own)", lambda x: f"{x['pj_per_unit_above_pi0']:.2f}"),
      ])
mem = ["dram.read", "dram.copy", "l2.read", "shared.read", "const.read"]
mheads = {"dram.read": "DRAM (read)", "dram.copy": "DRAM (copy)", "l2.read": "L2", "shared.read": "SHARED", "const.read": "CONSTANT"}
mrows = common + [
    ("Real throughput (bytes/cycle/SM)", lambda x: f"{x['per_cycle_per_sm']:.1f}"),
    ("Real throughput (GB/s)", lambda x: f"{x['per_s'] / 1e9:.0f}"),
] + power + [
    ("Energy efficiency (GB/J)", lambda x: f"{x['per_joule'] / 1e9:.2f}"),
    ("pJ per byte, in all", lambda x: f"{x['pj_per_unit']:.2f}"),
    ("  of which pi0", lambda x: f"{x['pj_per_unit_pi0']:.2f}"),
    ("  of which above pi0", lambda x: f"{x['pj_per_unit_above_pi0']:.2f}"),
]
table(f"Table III-style: {p['name']}, memory levels", mem, mheads, mrows)
for title, prefix in [("Fig. 6-style: DRAM coalescing", "coalesce."), ("Fig. 7-style: DRAM access size", "access."),
                      ("Fig. 8-style: shared-memory bank conflicts", "bank.")]:
    names = [n for n in rows if n.startswith(prefix)]
    table(f"{title} (bytes are the bytes each thread uses)", names, {n: n[len(prefix):] for n in names}, mrows)
if r.get("incomplete"):
    print(f"**INCOMPLETE:** {r['incomplete']}\n")
for w in r.get("warnings") or []:
    print(f"- warning: {w}")
