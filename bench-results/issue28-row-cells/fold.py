import sys, collections, re
# perf script -F comm,tid,ip,sym output: header line then frames (leaf first), blank line separates
path, must = sys.argv[1], sys.argv[2] if len(sys.argv)>2 else None
stacks=[]; cur=[]
for line in open(path, errors='replace'):
    line=line.rstrip('\n')
    if not line.strip():
        if cur: stacks.append(cur); cur=[]
        continue
    if not line.startswith((' ','\t')):
        if cur: stacks.append(cur)
        cur=[]; continue
    parts=line.strip().split(None,1)
    sym=parts[1] if len(parts)>1 else parts[0]
    sym=re.sub(r'\+0x[0-9a-f]+$','',sym)
    cur.append(sym)
if cur: stacks.append(cur)
sel=[s for s in stacks if must is None or any(must in f for f in s)]
print(f"{len(sel)} of {len(stacks)} samples")
selfc=collections.Counter(); child=collections.Counter()
for s in sel:
    selfc[s[0]]+=1
    for f in set(s): child[f]+=1
n=len(sel)
print("--- self"); 
for k,v in selfc.most_common(45): print(f"{100*v/n:6.2f}% {k[:150]}")
print("--- children")
for k,v in child.most_common(70): print(f"{100*v/n:6.2f}% {k[:150]}")
