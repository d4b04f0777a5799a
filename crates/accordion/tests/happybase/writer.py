"""A happybase writer for the cluster failover test: puts rows
PREFIX-000000, PREFIX-000001, ... into TABLE through the Thrift server at
HOST:PORT until SECONDS have passed, and prints each row whose put
returned ("ACK row time") and each failed attempt ("ERR time message"). A failed put
is retried (on a new connection) until it succeeds or time runs out, as an
application would; only a put that returned counts as acknowledged."""

import sys
import time

import happybase

host, port, table, prefix, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5])
deadline = time.time() + seconds
conn = None
i = 0
while time.time() < deadline:
    row = "%s-%06d" % (prefix, i)
    try:
        if conn is None:
            conn = happybase.Connection(host, port, autoconnect=True, timeout=10000)
        conn.table(table).put(row.encode(), {b"f:q": row.encode()})
        print("ACK " + row + " %.3f" % time.time(), flush=True)
        i += 1
    except Exception as e:  # noqa: BLE001 - any failure is reported and retried
        # happybase's IOError carries its message as bytes (its str() fails).
        message = getattr(e, "message", None) or repr(e)
        if isinstance(message, bytes):
            message = message.decode("utf-8", "replace")
        print("ERR %.3f " % time.time() + type(e).__name__ + ": " + str(message).replace("\n", " ")[:200], flush=True)
        try:
            if conn is not None:
                conn.close()
        except Exception:  # noqa: BLE001
            pass
        conn = None
        time.sleep(0.05)
