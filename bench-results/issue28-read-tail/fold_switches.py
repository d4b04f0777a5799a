import collections,re,sys
stacks=[];cur=[];comm=None
for line in open(sys.argv[1]):
    if not line.strip():
        if cur: stacks.append((comm,cur))
        cur=[];continue
    if not line.startswith((' ','\t')):
        comm=line.split()[0];continue
    parts=line.strip().split(None,1)
    cur.append(parts[1] if len(parts)>1 else parts[0])
if cur: stacks.append((comm,cur))
c=collections.Counter(); tot=collections.Counter()
for comm,st in stacks:
    key=[]
    for f in st:
        f=re.sub(r'\s*\(.*','',f)
        if f.startswith(('store::','memstore::','bench::')) or 'lll_lock' in f or 'malloc' in f or 'free' in f or 'lock_slow' in f or 'condvar' in f.lower() or 'Condvar' in f:
            key.append(f[:80])
        if len(key)>=int(sys.argv[2] if len(sys.argv)>2 else 4): break
    k=' <- '.join(key)
    c[(comm,k)]+=1
    if 'lll_lock_wait' in k: tot['arena']+=1
    elif 'lock_slow' in k: tot['mutex']+=1
    tot['all']+=1
print(tot)
for k,v in c.most_common(int(sys.argv[3]) if len(sys.argv)>3 else 20): print(v,k)
