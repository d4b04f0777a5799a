# Per binary and policy: rows/s, peak RSS ÷ budget and CPU µs per row of each round: python3 summary.py DIR
import json, glob, sys, collections
g = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + '/*.json')):
    name = f.split('/')[-1].rsplit('-', 1)[0]
    for r in json.load(open(f))['runs']:
        g[(r['policy'], name)].append(r)
for (policy, name), v in sorted(g.items()):
    print(f"{policy:14} {name:12} rows/s K " + ' / '.join(f"{r['ops_per_sec']/1e3:.0f}" for r in v)
          + "   RSS/budget " + ' / '.join(f"{r['peak_rss_bytes']/r['settings']['memstore_bytes']:.3f}" for r in v)
          + "   CPU us/row " + ' / '.join(f"{r['cpu_seconds']/r['ops']*1e6:.2f}" for r in v))
