#!/usr/bin/env python3
"""Issue 56's goal table: HBase's Java client (hbase-client 2.6.4, its default retries) runs a new user's program
(`MovingCluster program`: namespace, pre-split table, list by namespace, write, scan, flush, split, move, merge,
alter, balancer, truncate, drop) RUNS times against `accordion cluster start --servers 3` (its defaults: the balancer
every 10 s, 5 s sessions), in turn through ZooKeeper only and through each member's RPC address.
Usage: program-runs.py ACCORDION_BINARY CLASSPATH [RUNS]
(CLASSPATH: crates/accordion/tests/hbase_java/target/classes plus the jars in target/classpath.txt, as the tests
build them). Prints one line per run and the totals."""
import os, re, subprocess, sys, tempfile, time

binary, classpath = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 20
work = tempfile.mkdtemp(prefix="issue56-")
proc = subprocess.Popen([binary, "cluster", "start", "--servers", "3", "--dir", work],
                        env=dict(os.environ, RUST_LOG="warn"),
                        stdout=subprocess.PIPE, stderr=open(os.path.join(work, "cluster.log"), "w"), text=True)
zk, rpcs = None, []
for line in proc.stdout:
    m = re.search(r"ZooKeeper zk://([^/]+)(/\S*);", line)
    if m:
        zk = f"zk:{m.group(1)}{m.group(2)}/hbase"
    m = re.search(r"server \d+\s+thrift \S+\s+http \S+\s+pid \d+\s+rpc (\S+)", line)
    if m:
        rpcs.append(m.group(1))
    if "accordion cluster ready" in line:
        break
registries = [zk] + rpcs
print(f"cluster: {zk}, members' RPC {', '.join(rpcs)}; work dir {work}", flush=True)
passed = failed_runs = steps_failed = 0
try:
    for run in range(runs):
        registry = registries[run % len(registries)]
        started = time.time()
        out = subprocess.run(["java", "-cp", classpath, "MovingCluster", "program", registry, str(run)],
                             capture_output=True, text=True, timeout=900).stdout
        done = next((l for l in out.splitlines() if l.startswith("DONE ")), "DONE ? ?")
        fails = [l for l in out.splitlines() if l.startswith("FAIL ")]
        ok = done == "DONE 13 0"
        passed += ok
        failed_runs += not ok
        steps_failed += len(fails)
        print(f"run {run + 1:2} through {registry}: {done[5:]} (steps passed, failed) in {time.time() - started:.1f} s"
              + "".join(f"\n    {f[:300]}" for f in fails), flush=True)
finally:
    proc.send_signal(2)
    proc.wait(timeout=60)
print(f"{runs} runs: {passed} passed every step, {failed_runs} failed; {steps_failed} failed steps in all")
