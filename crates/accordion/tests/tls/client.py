"""A thriftpy2 client over TLS, as a Python application would write one
against a TLS-enabled HBase Thrift gateway (happybase itself has no TLS
option): HBase's own IDL, shipped with happybase, over ssl.

usage: client.py HOST PORT CA_FILE [CERT_FILE KEY_FILE]
Prints "served <tables>" or "refused <error>".
"""

import os
import ssl
import sys

import happybase
import thriftpy2
from thriftpy2.rpc import make_client

host, port, cafile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
certfile, keyfile = (sys.argv[4], sys.argv[5]) if len(sys.argv) > 5 else (None, None)
hbase = thriftpy2.load(os.path.join(os.path.dirname(happybase.__file__), "Hbase.thrift"), module_name="Hbase_thrift")
context = ssl.create_default_context(cafile=cafile)
if certfile:
    context.load_cert_chain(certfile, keyfile)
try:
    client = make_client(hbase.Hbase, host, port, ssl_context=context, timeout=10000)
    if certfile:
        client.createTable(b"py", [hbase.ColumnDescriptor(name=b"f:", maxVersions=1)])
        client.mutateRow(b"py", b"r", [hbase.Mutation(column=b"f:q", value=b"over tls")], {})
        value = client.getRow(b"py", b"r", {})[0].columns[b"f:q"].value
        assert value == b"over tls", value
    tables = client.getTableNames()
    print("served", b",".join(tables).decode())
except Exception as e:  # noqa: BLE001 - any failure is the answer
    print("refused", type(e).__name__, e)
