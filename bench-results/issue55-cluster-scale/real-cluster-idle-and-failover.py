#!/usr/bin/env python3
"""Issue 55's real-cluster figures: `accordion cluster start --servers 3` (local root, 5 s sessions), a table
pre-split into REGIONS regions with one row in each, then
  - CPU of the three servers, the master (the `cluster start` process) and ZooKeeper over IDLE seconds;
  - one server SIGKILLed: seconds until the master's view (its /metrics) has every region open again, and
    until a happybase client through a survivor reads every row.
Usage: real-cluster-idle-and-failover.py ACCORDION_BINARY [REGIONS] [IDLE] [SERVERS] [BALANCER_MS]
(run with the repo's .venv python). SERVERS defaults to 3, BALANCER_MS (cluster start's --balancer-period-ms) to its
default; with 0 the balancer is off, every region stays on the first server and that server is the one killed."""
import os, re, signal, subprocess, sys, tempfile, time, urllib.error, urllib.request

import happybase

binary = sys.argv[1]
regions = int(sys.argv[2]) if len(sys.argv) > 2 else 1200
idle = float(sys.argv[3]) if len(sys.argv) > 3 else 30.0
n_servers = int(sys.argv[4]) if len(sys.argv) > 4 else 3
balancer = ["--balancer-period-ms", sys.argv[5]] if len(sys.argv) > 5 else []
work = tempfile.mkdtemp(prefix="issue55-")
proc = subprocess.Popen([binary, "cluster", "start", "--servers", str(n_servers), "--dir", work] + balancer,
                        env=dict(os.environ, RUST_LOG="warn"),
                        stdout=subprocess.PIPE, stderr=open(os.path.join(work, "cluster.log"), "w"), text=True)
servers, master_http = [], None
for line in proc.stdout:
    m = re.search(r"master\s+http://([^/]+)/", line)
    if m:
        master_http = m.group(1)
    m = re.search(r"server (\d+)\s+thrift (\S+)\s+http http://([^/]+)/\s+pid (\d+)(?:\s+rpc (\S+))?", line)
    if m:
        servers.append({"thrift": m.group(2), "http": m.group(3), "pid": int(m.group(4)), "rpc": m.group(5)})
    if "accordion cluster ready" in line:
        break

def get(url):
    return urllib.request.urlopen(url, timeout=30).read().decode()

def metrics():
    """The master's /metrics; a build without it (before issue 55): regions open = OPEN in the live servers'
    /status (polled at most every 0.5 s), passes from the master's /status."""
    try:
        text = get(f"http://{master_http}/metrics")
        return {k: float(v) for k, v in (l.split(" ", 1) for l in text.splitlines() if l and not l.startswith("#"))}
    except urllib.error.HTTPError:
        time.sleep(0.4)
        import json
        status = json.loads(get(f"http://{master_http}/status"))
        live = {s["http"] for s in status["servers"]}
        open_regions = 0
        for s in servers:
            if s["http"] in live:
                try:
                    doc = json.loads(get(f"http://{s['http']}/status"))
                except Exception:
                    continue
                open_regions += sum(1 for t in doc["tables"] for r in t["regions"] if r["state"] == "OPEN")
        return {"accordion_master_open_regions": open_regions, "accordion_master_passes_total": status["passes"],
                "accordion_master_reports_applied_total": 0, "accordion_master_report_bytes_total": 0}

def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

def zk_pid():
    out = subprocess.run(["pgrep", "-f", "QuorumPeerMain|ZooKeeperServerMain"], capture_output=True, text=True).stdout.split()
    return int(out[-1]) if out else None

def wait(what, cond, timeout=600):
    t = time.time()
    while not cond():
        if time.time() - t > timeout:
            raise SystemExit(f"{what}: not within {timeout} s")
        time.sleep(0.1)
    return time.time() - t

host, port = servers[0]["thrift"].rsplit(":", 1)
keys = [f"r{i:05d}" for i in range(1, regions)]
splits = ", ".join(f"'{k}'" for k in keys)
t = time.time()
# The shell splits the new table at each key in turn; a split of a region the balancer is moving at that moment
# is refused ("not open"): the keys from the one refused on are split one by one, each retried.
shell = lambda cmd: subprocess.run([binary, "shell", "--server", servers[0]["thrift"], "-e", cmd],
                                   capture_output=True, text=True)
created = shell(f"create 't', 'f', SPLITS => [{splits}]")
if created.returncode != 0:
    refused = re.search(r"could not split it at (r\d+)", created.stdout + created.stderr)
    print("create: a split was refused, the rest split one by one:", (created.stdout + created.stderr).strip()[-300:])
    for key in keys[keys.index(refused.group(1)):] if refused else []:
        # Sent to each server in turn: a split is made by the server holding the region.
        done = False
        for attempt in range(10):
            for s in servers:
                if subprocess.run([binary, "shell", "--server", s["thrift"], "-e", f"split 't', '{key}'"],
                                  capture_output=True).returncode == 0:
                    done = True
                    break
            if done:
                break
            time.sleep(0.5)
wait("every region open", lambda: metrics().get("accordion_master_open_regions") == regions)
print(f"created a table of {regions} regions: all open {time.time() - t:.1f} s after the create began")
conn = happybase.Connection(host, int(port), autoconnect=True)
table = conn.table("t")
rows = [b"r00000"] + [k.encode() + b"-row" for k in keys]
# The balancer is moving regions meanwhile: a batch that meets a region in a move is refused
# (NotServingRegionException) and sent again, as HBase's clients retry it (happybase does not).
for start in range(0, len(rows), 500):
    for attempt in range(60):
        try:
            with table.batch() as b:
                for r in rows[start:start + 500]:
                    b.put(r, {b"f:q": r})  # the value is the row, as ClusterWriter read checks
            break
        except Exception as e:  # noqa: BLE001 - the Thrift IOError of a region in a move
            if "NotServingRegion" not in str(e) or attempt == 59:
                raise
            time.sleep(0.5)
# Let the balancer spread the regions (every 10 s under cluster start) and settle.
def spread():
    loads = []
    for s in servers:
        st = urllib.request.urlopen(f"http://{s['http']}/status", timeout=30).read().decode()
        loads.append(st.count('"state": "OPEN"') + st.count('"state":"OPEN"'))
    return loads
if balancer != ["--balancer-period-ms", "0"]:
    wait("the regions spread", lambda: min(spread()) >= regions // n_servers - 2, timeout=900)
    time.sleep(15)
print("regions per server:", spread())
pids = [s["pid"] for s in servers]
zk = zk_pid()
before = [cpu(p) for p in pids] + [cpu(proc.pid)] + ([cpu(zk)] if zk else [])
m0 = metrics()
time.sleep(idle)
after = [cpu(p) for p in pids] + [cpu(proc.pid)] + ([cpu(zk)] if zk else [])
m1 = metrics()
used = [a - b for a, b in zip(after, before)]
n = n_servers
print(f"idle {idle:.0f} s: servers' CPU {sum(used[:n]):.2f} s together ({', '.join(f'{u:.2f}' for u in used[:n])}); "
      f"master {used[n]:.2f} s; ZooKeeper {used[n + 1] if zk else float('nan'):.2f} s; master passes "
      f"{m1['accordion_master_passes_total'] - m0['accordion_master_passes_total']:.0f}; reports "
      f"{m1['accordion_master_reports_applied_total'] - m0['accordion_master_reports_applied_total']:.0f} "
      f"({m1['accordion_master_report_bytes_total'] - m0['accordion_master_report_bytes_total']:.0f} bytes)")
loads = spread()
victim_at = 1 if loads[1] == max(loads) else loads.index(max(loads))
victim = servers[victim_at]
held = loads[victim_at]
# HBase's Java client (hbase-client 2.6.4, the test harness ClusterWriter: RpcConnectionRegistry given the
# survivors' RPC addresses; 60 retries, 100 ms pause, 5 s RPC timeout), started at the kill, reads one row of every
# region, one after another.
java_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../crates/accordion/tests/hbase_java/target")
classpath = os.path.join(java_dir, "classes") + ":" + open(os.path.join(java_dir, "classpath.txt")).read().strip()
bootstrap = ",".join(s["rpc"] for s in servers if s is not victim and s["rpc"])
os.kill(victim["pid"], signal.SIGKILL)
killed = time.time()
java = subprocess.Popen(["java", "-cp", classpath, "ClusterWriter", "read", bootstrap, "t"], stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
java.stdin.write("\n".join(r.decode() for r in rows))
java.stdin.close()
java_done = {}
def java_wait():
    java_done["out"] = java.stdout.read()
    java_done["err"] = java.stderr.read()
    java.wait()
    java_done["at"] = time.time()
import threading
java_thread = threading.Thread(target=java_wait)
java_thread.start()
wait("the master sees the victim's regions gone", lambda: metrics().get("accordion_master_open_regions", regions) < regions, 60)
wait("every region open again", lambda: metrics().get("accordion_master_open_regions") == regions, 600)
reopened = time.time() - killed
survivor = next(s for s in servers if s is not victim)["thrift"].rsplit(":", 1)
def all_rows():
    try:
        c = happybase.Connection(survivor[0], int(survivor[1]), timeout=60000)
        got = sum(1 for _ in c.table("t").scan(columns=[b"f:q"], batch_size=1000))
        c.close()
        return got == len(rows)
    except Exception:
        return False
wait("every row read back", all_rows, 600)
print(f"SIGKILL of server {victim_at + 1} ({held} regions): every region open again {reopened:.1f} s after the kill; "
      f"every row read back through a survivor {time.time() - killed:.1f} s after it")
java_thread.join(900)
out = java_done.get("out", "")
print(f"HBase's Java client: {out.strip().splitlines()[-1] if out.strip() else java_done.get('err', '')[-2000:]} "
      f"{java_done.get('at', float('nan')) - killed:.1f} s after the kill (its JVM start included)")
if "MISSING" in out:
    print("  first missing:", [l for l in out.splitlines() if l.startswith("MISSING")][:3], java_done.get("err", "")[-1500:])
proc.send_signal(signal.SIGINT)
try:
    proc.wait(60)
except subprocess.TimeoutExpired:
    proc.kill()
