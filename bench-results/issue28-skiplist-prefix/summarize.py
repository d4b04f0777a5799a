# Ratios acc-skipprefix / acc-head per round from ab.txt, with medians.
import statistics as st,collections,sys
A,B=(sys.argv[1:3] if len(sys.argv)>2 else ('acc-head','acc-skipprefix'))
rows=collections.defaultdict(dict)
for l in open('ab.txt'):
    w=l.split()
    b,r,preset,pol=w[0],w[1],w[2],w[3]
    rows[(preset,pol,r)][b]=dict(ops=w[5],cpu=w[7],p50=w[10],p99=w[11],rss=w[14],held=w[17],flushes=w[19])
print(f"{B} / {A} per round (alternating); median")
for key in sorted({(p,pol) for (p,pol,r) in rows}):
    rs=sorted(r for (p,pol,r) in rows if (p,pol)==key and len(rows[(p,pol,r)])==2)
    for m in ['ops','cpu','p50','p99','rss','held','flushes']:
        vals=[float(rows[key+(r,)][B][m])/float(rows[key+(r,)][A][m]) for r in rs if rows[key+(r,)][A][m] not in ('None','0')]
        if vals: print(f"{key[0]:17} {key[1]:14} {m:8} "+' '.join('%.2f'%v for v in vals)+"  median %.2f"%st.median(vals))
