import json,sys,statistics,collections
d=json.load(open(sys.argv[1]))
runs=collections.defaultdict(list)
for r in d['all_runs']:
    runs[(r['preset'],r['engine'],r['policy'] or '-')].append(r)
for preset in sorted(set(k[0] for k in runs)):
    rk=[r for k,v in runs.items() if k[0]==preset and k[1]=='rocksdb' for r in v]
    rocks=[r['ops_per_sec'] for r in rk]
    print(preset, 'rocksdb rows/s', [round(x/1000,1) for x in rocks], 'median', round(statistics.median(rocks)/1000,1), 'RSS MiB', [round(r['peak_rss_bytes']/2**20) for r in rk], 'cpu us/row', round(statistics.median([r['cpu_seconds']/r['ops']*1e6 for r in rk]),2))
    for k,v in sorted(runs.items()):
        if k[0]!=preset or k[1]=='rocksdb': continue
        ops=[r['ops_per_sec'] for r in v]
        per=[round(a/b,2) for a,b in zip(ops,rocks)]
        print('  ',k[2],'rows/s',[round(x/1000,1) for x in ops],'median',round(statistics.median(ops)/1000,1),'ratio of medians %.2f'%(statistics.median(ops)/statistics.median(rocks)),'per round',per,'RSS MiB',[round(r['peak_rss_bytes']/2**20) for r in v],'cpu us/row',round(statistics.median([r['cpu_seconds']/r['ops']*1e6 for r in v]),2))
