import sys,collections,statistics as st
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    f=l.split()
    if len(f)<7: continue
    d[(f[0],f[2])].append((float(f[3]),float(f[5])))
bins=sorted({k[0] for k in d}); presets=sorted({k[1] for k in d})
for p in presets:
    row=[]
    for b in bins:
        v=d[(b,p)]; row.append((st.median(x for x,_ in v), st.median(y for _,y in v), [int(x) for x,_ in v]))
    print(p, ' | '.join(f"{b}: ops {r[0]:.0f} cpu/op {r[1]:.1f} {r[2]}" for b,r in zip(bins,row)), f"ratio ops {row[-1][0]/row[0][0]:.3f} cpu {row[-1][1]/row[0][1]:.3f}")
