# Is the energy counter cheaper through nvmlDeviceGetFieldValues (field 83) than through
# nvmlDeviceGetTotalEnergyConsumption (3.4-3.6 ms of CPU a call on an H200)? Cost, agreement,
# step period and what the field's timestamp says, idle and under a bf16 GEMM.
import time, os, sys, json, threading
import pynvml as N
gpu = int(os.environ.get("GPU", "0"))
N.nvmlInit(); h = N.nvmlDeviceGetHandleByIndex(gpu)
F = 83
def fv():
    v = N.nvmlDeviceGetFieldValues(h, [F])[0]
    return v
def cost(f, n=200, gap=0.005):
    ws=[];cs=[]
    for i in range(n):
        t0=time.perf_counter();c0=time.thread_time(); f(); c1=time.thread_time();t1=time.perf_counter()
        ws.append(t1-t0);cs.append(c1-c0); time.sleep(gap)
    ws.sort();cs.sort()
    return {"wall_med_ms":1e3*ws[n//2],"cpu_med_ms":1e3*cs[n//2],"cpu_mean_ms":1e3*sum(cs)/n}
res={"uuid":N.nvmlDeviceGetUUID(h),"driver":N.nvmlSystemGetDriverVersion(),"date":time.strftime("%Y-%m-%dT%H:%M:%SZ",time.gmtime())}
v=fv(); res["field83_first"]={"ret":v.nvmlReturn,"valueType":v.valueType,"ull":v.value.ullVal,"ts":v.timestamp,"lat":v.latencyUsec}
res["api_first"]=N.nvmlDeviceGetTotalEnergyConsumption(h)
res["idle_cost_field83"]=cost(fv); res["idle_cost_api"]=cost(lambda: N.nvmlDeviceGetTotalEnergyConsumption(h),n=60)
def trace(sec=2.0, gap=0.002):
    rows=[]; end=time.perf_counter()+sec
    while time.perf_counter()<end:
        t=time.time(); v=fv(); rows.append((t, v.value.ullVal, v.timestamp, v.latencyUsec, v.nvmlReturn)); time.sleep(gap)
    steps=[i for i in range(1,len(rows)) if rows[i][1]!=rows[i-1][1]]
    tsch=[i for i in range(1,len(rows)) if rows[i][2]!=rows[i-1][2]]
    st=[rows[i][0] for i in steps]; d=[b-a for a,b in zip(st,st[1:])]
    return {"reads":len(rows),"value_steps":len(steps),"ts_changes":len(tsch),
            "step_ms_med":1e3*sorted(d)[len(d)//2] if d else None,"step_ms_min":1e3*min(d) if d else None,"step_ms_max":1e3*max(d) if d else None,
            "first_rows":rows[:5],"rows_at_steps":[rows[i] for i in steps[:8]],
            "ts_minus_wall_ms_at_steps":[ (rows[i][2]/1e6-rows[i][0])*1e3 for i in steps[:20]]}
res["idle_trace"]=trace()
import torch
a=torch.randn(8192,8192,device="cuda",dtype=torch.bfloat16); b=torch.randn_like(a); stop=False
def load():
    while not stop:
        for _ in range(20): a@b
        torch.cuda.synchronize()
th=threading.Thread(target=load); th.start(); time.sleep(1.0)
res["load_cost_field83"]=cost(fv)
res["load_trace"]=trace()
# agreement: alternate api and field reads
pairs=[]
for i in range(20):
    x=N.nvmlDeviceGetTotalEnergyConsumption(h); y=fv().value.ullVal; pairs.append(y-x); time.sleep(0.05)
res["field_minus_api_mJ"]=pairs
stop=True; th.join()
print(json.dumps(res,indent=1))
json.dump(res,open(sys.argv[1]+"/field83.json","w"),indent=1)
