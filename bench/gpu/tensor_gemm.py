#!/usr/bin/env python3
"""cuBLAS GEMMs (torch.matmul, bf16; torch._scaled_mm, fp8 e4m3) at the tensor roofline's
intensities, each measured for its energy with the NVML energy counter, then compared with
gpuwatt's tensor archline fit (issue 33).

    python3 tensor_gemm.py measure OUT.jsonl [--seconds 2.5]
    python3 tensor_gemm.py compare OUT.jsonl ARCHLINE_RESULTS.json > compare.md
    python3 tensor_gemm.py selftest

measure: for each dtype and shape (M x K) @ (K x N), N = K = 8192 and M from 8 to 8192
(intensities about 8 to 2700 flop/byte of the minimal traffic 2(MK + KN + MN) bytes per
element size), runs the product back to back for --seconds while a thread polls the energy
counter every 2 ms; the power is the counter's rise between its first and its last step
inside the run over the time between those steps (both inside the steady load, so no idle
time enters), the time per GEMM comes from CUDA events over the whole run, and the energy
per GEMM is their product. One JSON line per shape: dtype, m, n, k, macs, bytes (minimal),
intensity_flop_per_byte, time_s, power_w, energy_j, sm_clock_mhz (median of polls).

compare: predicts each GEMM's energy with the archline fit of its precision (tc-bf16 or
tc-fp8 in results.json: E = W eps_flop + Q eps_mem + T pi0, W = 2 MACs, Q the minimal
bytes, T the measured time) and prints measured / predicted and the library's pJ per MAC
against the fit's eps_mac. A GEMM moves at least Q bytes (more when its tiles are reread),
so the model with the minimal Q is a lower bound on what the library could spend.
"""
import json
import statistics
import sys
import threading
import time


def shapes():
    n = k = 8192
    for m in (8, 32, 128, 512, 2048, 8192):
        yield m, n, k


def measure(out, seconds):
    import pynvml
    import torch

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    f = open(out, "w")
    for dtype in ("bf16", "fp8"):
        for m, n, k in shapes():
            try:
                rec = one(torch, pynvml, h, dtype, m, n, k, seconds)
            except Exception as e:  # keep going: one shape's failure is recorded
                rec = {"dtype": dtype, "m": m, "n": n, "k": k, "error": str(e)}
            print(json.dumps(rec), file=f, flush=True)
            print(json.dumps(rec), flush=True)


def one(torch, pynvml, h, dtype, m, n, k, seconds):
    size = 2 if dtype == "bf16" else 1
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    if dtype == "bf16":
        bt = b.t()
        run = lambda: torch.matmul(a, bt)
    else:
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
        one_ = torch.tensor(1.0, device="cuda")
        run = lambda: torch._scaled_mm(a8, b8, scale_a=one_, scale_b=one_, out_dtype=torch.bfloat16)
    for _ in range(5):
        run()
    torch.cuda.synchronize()
    # Batch size: about 20 ms of launches between host checks.
    t0 = time.perf_counter()
    run()
    torch.cuda.synchronize()
    per = max(time.perf_counter() - t0, 1e-6)
    batch = max(1, int(0.02 / per))
    polls, clocks = [], []
    stop = threading.Event()

    def poll():
        last = None
        while not stop.is_set():
            e = pynvml.nvmlDeviceGetTotalEnergyConsumption(h)  # mJ
            t = time.perf_counter()
            if e != last:
                polls.append((t, e))
                last = e
            if len(clocks) < 2000:
                clocks.append(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
            time.sleep(0.002)

    th = threading.Thread(target=poll)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    count = 0
    th.start()
    t_start = time.perf_counter()
    start.record()
    while time.perf_counter() - t_start < seconds:
        for _ in range(batch):
            run()
        count += batch
        torch.cuda.synchronize()
    end.record()
    end.synchronize()
    t_end = time.perf_counter()
    stop.set()
    th.join()
    gemm_s = start.elapsed_time(end) / 1e3 / count
    # The counter's steps strictly inside the run, skipping the first 0.3 s (ramp).
    inside = [(t, e) for t, e in polls if t_start + 0.3 <= t <= t_end]
    if len(inside) < 3:
        raise RuntimeError(f"{len(inside)} energy counter steps inside the run")
    (ta, ea), (tb, eb) = inside[0], inside[-1]
    power = (eb - ea) / 1e3 / (tb - ta)
    macs = m * n * k
    q = size * (m * k + k * n) + 2 * m * n  # the output is bf16
    return {"dtype": dtype, "m": m, "n": n, "k": k, "macs": macs, "bytes": q,
            "intensity_flop_per_byte": 2 * macs / q, "gemms": count, "time_s": gemm_s,
            "power_w": power, "energy_j": power * gemm_s, "counter_steps": len(inside),
            "sm_clock_mhz": statistics.median(clocks) if clocks else 0,
            "tflops": 2 * macs / gemm_s / 1e12}


def compare(jsonl, results):
    rep = json.load(open(results))
    fits = rep.get("results", {})
    rows = [json.loads(l) for l in open(jsonl) if l.strip()]
    out = ["| dtype | M x N x K | flop/byte (minimal Q) | TFLOP/s | SM clock (MHz) | power (W) | pJ/MAC measured | pJ/MAC model | measured / model | eps_mac of the fit (pJ) |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['dtype']} | {r['m']} x {r['n']} x {r['k']} | - | - | - | - | - | - | - | error: {r['error'][:80]} |")
            continue
        fit = fits.get("tc-" + r["dtype"])
        pred, ratio, eps = predict(fit, r)
        model = f"{pred / r['macs'] * 1e12:.4g}" if pred else "-"
        rat = f"{ratio:.3f}" if ratio else "-"
        out.append(f"| {r['dtype']} | {r['m']} x {r['n']} x {r['k']} | {r['intensity_flop_per_byte']:.4g} | {r['tflops']:.4g} | {r['sm_clock_mhz']:.0f} | {r['power_w']:.1f} | "
                   f"{r['energy_j'] / r['macs'] * 1e12:.4g} | {model} | {rat} | {eps} |")
    return "\n".join(out) + "\n"


def predict(fit, r):
    """E = W eps_flop + Q eps_mem + T pi0 with the fit's parameters (pJ, pJ/B, W)."""
    if not fit or not fit.get("eps_flop_pj"):
        return 0, 0, "no fit"
    w = 2 * r["macs"]
    pred = (w * fit["eps_flop_pj"] + r["bytes"] * fit["eps_mem_pj_per_byte"]) * 1e-12 + r["time_s"] * fit["pi0_w"]
    ci = fit.get("eps_mac_pj_ci") or [0, 0]
    eps = f"{fit.get('eps_mac_pj', 2 * fit['eps_flop_pj']):.4g} [{ci[0]:.4g}, {ci[1]:.4g}]"
    return pred, r["energy_j"] / pred if pred > 0 else 0, eps


def selftest():
    fit = {"eps_flop_pj": 0.7, "eps_mem_pj_per_byte": 100.0, "pi0_w": 150.0, "eps_mac_pj": 1.4, "eps_mac_pj_ci": [1.3, 1.5]}
    r = {"dtype": "bf16", "m": 8192, "n": 8192, "k": 8192, "macs": 8192**3, "bytes": 3 * 2 * 8192**2, "time_s": 1e-3,
         "energy_j": 0, "intensity_flop_per_byte": 1, "tflops": 1, "sm_clock_mhz": 1, "power_w": 1}
    want = 2 * 8192**3 * 0.7e-12 + 3 * 2 * 8192**2 * 100e-12 + 1e-3 * 150
    r["energy_j"] = 1.1 * want
    pred, ratio, eps = predict(fit, r)
    assert abs(pred / want - 1) < 1e-12, (pred, want)
    assert abs(ratio - 1.1) < 1e-12, ratio
    assert eps.startswith("1.4 [1.3, 1.5]"), eps
    assert predict(None, r)[0] == 0
    print("selftest ok")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd = sys.argv[1]
    if cmd == "measure":
        secs = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 2.5
        measure(sys.argv[2], secs)
    elif cmd == "compare":
        sys.stdout.write(compare(sys.argv[2], sys.argv[3]))
    elif cmd == "selftest":
        selftest()
    else:
        sys.exit(__doc__)
