#!/usr/bin/env python3
"""Smoke test of hdfs/minicluster (about 45 s): hdfs/minicluster/smoke/smoke.py

Starts run.sh --datanodes 3, checks the READY line and that the NameNode port accepts
connections, drives the stdin protocol (stop a DataNode, watch the NameNode count it dead,
restart it), checks that a client writing with hflush survives the loss of a pipeline DataNode
with policy NEVER and fails with policy DEFAULT (no spare DataNode), then closes stdin and checks
that the JVM exits 0 and removes its directory.
"""
import os, re, socket, subprocess, tempfile, time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(HERE, "run.sh")

def main():
    base = os.path.join(tempfile.mkdtemp(prefix="mini-hdfs-smoke-"), "dfs")
    log = open(base + ".stderr.log", "w")
    t0 = time.time()
    p = subprocess.Popen([RUN, "--dir", base, "--datanodes", "3"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)
    line = p.stdout.readline()
    m = re.fullmatch(r"READY (hdfs://127\.0\.0\.1:(\d+))\n", line)
    assert m, f"expected READY, got {line!r} (stderr in {log.name})"
    url, port = m.group(1), int(m.group(2))
    print(f"{line.strip()} after {time.time() - t0:.1f} s")
    socket.create_connection(("127.0.0.1", port), timeout=5).close()

    def cmd(c, want=None):
        p.stdin.write(c + "\n"); p.stdin.flush()
        r = p.stdout.readline().strip()
        print(f"  {c} -> {r}")
        if want is not None:
            assert re.fullmatch(want, r), f"{c}: expected {want}, got {r}"
        return r

    cmd("datanodes", "OK 3")
    cmd("stop-datanode 9", "ERR .*")
    cmd("stop-datanode 1", r"OK stopped datanode 1 127\.0\.0\.1:\d+")
    t = time.time()
    while cmd("datanodes") != "OK 2":
        assert time.time() - t < 30, "the NameNode did not notice the stopped DataNode"
        time.sleep(1)
    print(f"  (the NameNode counted it dead after {time.time() - t:.1f} s)")
    cmd("restart-datanode 1", r"OK restarted datanode 1 127\.0\.0\.1:\d+")
    cmd("datanodes", "OK 3")

    cp = os.path.join(HERE, "target", "classes") + ":" + \
        open(os.path.join(HERE, "target", "classpath.txt")).read().strip()
    for policy, want in [("NEVER", "CLOSED .* content ok"), ("DEFAULT", "WRITE FAILED: .*Failed to replace a bad datanode.*")]:
        c = subprocess.Popen(["java", "-Xmx256m", "-cp", cp, os.path.join(HERE, "smoke", "PipelineRecovery.java"),
                              url, policy], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, bufsize=1)
        first = c.stdout.readline().strip()
        assert first == "FLUSHED repl=3", first
        cmd("stop-datanode 1", "OK .*")
        c.stdin.write("go\n"); c.stdin.flush()
        rest = [l.strip() for l in c.stdout]
        c.wait()
        print(f"  client with policy {policy}: {first}; {'; '.join(r[:120] for r in rest)}")
        assert re.fullmatch(want, rest[-1]), rest
        cmd("restart-datanode 1", "OK .*")

    p.stdin.close()  # end of stdin: shut down and exit 0
    rc = p.wait(timeout=60)
    assert rc == 0, rc
    assert not os.path.exists(base), f"{base} left behind"
    log.close()
    os.remove(log.name)
    os.rmdir(os.path.dirname(base))
    print(f"OK: exit {rc} on end of stdin, {base} removed")

if __name__ == "__main__":
    main()
