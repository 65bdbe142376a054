#!/usr/bin/env python3
"""How late the H200's energy counter is against its power ring, from a recorded
bench/gpu/intervals_shapes.sh run (measure's trace and the independent pynvml poller).

usage: lag.py RUN_DIR   (RUN_DIR holds measure/trace.json, measure/trace.csv.gz, poller.csv.gz)

For a lag L, each 100 ms step of the counter (dE between two updates) is compared with the
ring's (power.samples) energy over the same interval moved back by L; the gain is fitted by
least squares and the residual's rms printed. Twice: with the update times the poller saw
(it reads the counter every 3-5 ms), and with the stamps gpuwatt's Sampler gave its own
readings (measure --counter-every 100ms). Last, how far the Sampler's stamps lie from the
poller's update times.
"""
import gzip, csv, json, sys, datetime, bisect
d=sys.argv[1]
m=json.load(open(d+'/measure/trace.json'))
st=datetime.datetime.fromisoformat(m['start'].replace('Z','+00:00')[:26]+'+00:00').timestamp()
# poller updates
rows=[(float(r[0]),float(r[1]),float(r[2])) for r in list(csv.reader(gzip.open(d+'/poller.csv.gz','rt')))[1:]]
ups=[]  # (update time estimate in trace secs, energy J)
for a,b in zip(rows,rows[1:]):
    if b[2]!=a[2]:
        # update happened between a's read and b's read; reads happen ~mid call
        u=((a[0]+a[1])/2+(b[0]+b[1])/2)/2 - st
        ups.append((u,b[2]/1000.0))
ring=[];ctr=[]
for r in csv.DictReader(gzip.open(d+'/measure/trace.csv.gz','rt')):
    if r['channel']=='power.samples': ring.append((float(r['t_s']),float(r['power_w'])))
    if r['channel']=='energy.total': ctr.append((float(r['t_s']),float(r['value'])))
ring.sort()
rt=[x[0] for x in ring]; rp=[x[1] for x in ring]
# ring energy: piecewise constant, each sample covers [t-0.02, t] (a 20 ms average stamped at its end?)
cum=[0.0]
for i in range(1,len(rt)): cum.append(cum[-1]+rp[i]*(rt[i]-rt[i-1]))
def E(a,b):
    def at(t):
        i=bisect.bisect_left(rt,t)
        if i<=0: return 0.0
        if i>=len(rt): return cum[-1]
        return cum[i-1]+rp[i]*(t-rt[i-1])
    return at(b)-at(a)
def fit(L, pts):
    xs=[];ys=[]
    for (u0,e0),(u1,e1) in zip(pts,pts[1:]):
        if u1-u0>0.5 or u0<rt[0]+1 or u1>rt[-1]-1: continue
        xs.append(E(u0-L,u1-L)); ys.append(e1-e0)
    g=sum(x*y for x,y in zip(xs,ys))/sum(x*x for x in xs)
    res=sum((y-g*x)**2 for x,y in zip(xs,ys))
    return res/len(xs),g,len(xs)
for name,pts in (('poller updates',ups),('sampler stamps',ctr)):
    best=min((fit(L/1000,pts)[0],L) for L in range(-120,121,5))
    fine=min((fit(L/1000,pts)[0],L) for L in range(best[1]-6,best[1]+7,1))
    print(d.split('/')[-2],name,'best L ms',fine[1],'rms J %.2f'%fine[0]**.5, 'L=0 rms %.2f'%fit(0,pts)[0]**.5,'L=50 rms %.2f'%fit(0.05,pts)[0]**.5, 'n',fit(0,pts)[2])
# sampler stamp vs poller update: for each sampler reading find the update with same value
uv={}
for u,e in ups: uv.setdefault(round(e*1000),u)
diffs=[t-uv[round(v*1000)] for t,v in ctr if round(v*1000) in uv]
diffs.sort()
print('sampler stamp - poller update time: median ms %.1f p10 %.1f p90 %.1f n %d'%(1000*diffs[len(diffs)//2],1000*diffs[len(diffs)//10],1000*diffs[9*len(diffs)//10],len(diffs)))
