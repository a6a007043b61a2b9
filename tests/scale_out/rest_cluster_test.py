"""The Azure Table REST gateway in a scale-out cluster, with real processes
(ctest rest_cluster, label scale-out): sidetable-kafka-mock and two
`sidetable` members with configs/sidetable.cluster.dev.yaml and --rest, as
docs/scale-out.md ("Try a cluster on one machine") starts them, on ports
the system picks. Every request is raw HTTP signed here (SharedKey with the
development account, or a table SAS), so status codes, x-ms-error-code and
the odata.error bodies are checked as the Table service defines them
(../shared/reference/azure-table-semantics.md, docs/rest.md).

Each key's shard is computed as the members compute it (murmur2 of
"<table>/<PartitionKey>", docs/scale-out.md "Shards") and its owner read
from /cluster, so the test writes through one member keys another member
owns (the request is forwarded) and reads them through the other member.
The members' sidetable_cluster_forwarded_total proves the forwarding
happened. Errors are checked to change nothing (read back through the
other member). Bounded: the cluster forms in 7 to 25 s; each request has a
time-out, and a 503 ServerBusy (a rebalance finishing) is retried with the
same x-ms-client-request-id for at most REQUEST_DEADLINE_S.
"""

import base64
import email.utils
import hashlib
import hmac
import http.client
import json
import os
import sys
import tempfile
import time
import unittest
import urllib.parse

SIDETABLE = os.environ["SIDETABLE"]
MOCK = os.environ["KAFKA_MOCK"]
SOURCE = os.environ["SOURCE_DIR"]
CONFIG = os.path.join(SOURCE, "configs", "sidetable.cluster.dev.yaml")
SHARDS = 6  # the file's kafka.partitions

sys.path.insert(0, os.path.join(SOURCE, "tests", "deploy_common"))
import local_cluster  # noqa: E402

ACCOUNT = "devstoreaccount1"
KEY = base64.b64decode("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
                       "K1SZFPTOtr/KBHBeksoGMGw==")
REQUEST_DEADLINE_S = 20


class Reply:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    def json(self):
        return json.loads(self.body)

    def error_code(self):
        return self.headers.get("x-ms-error-code")

    def __repr__(self):
        return f"{self.status} {self.error_code() or ''} {self.body[:600]!r}"


class Rest:
    """One member's REST endpoint; `sign`: "key" (SharedKey), "bad" (a
    SharedKey signature with another key), "stale" (a date 20 minutes
    old), "none" (no Authorization), or a SAS query string."""

    retries = 0  # 503 ServerBusy answers retried, over every endpoint

    def __init__(self, address, name, account=ACCOUNT, key=KEY):
        self.host, port = address.rsplit(":", 1)
        self.port = int(port)
        self.name = name
        self.account = account
        self.key = key

    def call(self, method, path, body=None, headers=None, sign="key", query=""):
        data = json.dumps(body) if isinstance(body, (dict, list)) else (body or "")
        client_request_id = f"rest-cluster-{time.monotonic_ns()}"
        until = time.time() + REQUEST_DEADLINE_S
        while True:
            r = self._once(method, path, data, dict(headers or {}), sign, query, client_request_id)
            if r.status == 503 and r.error_code() == "ServerBusy" and time.time() < until:
                Rest.retries += 1
                time.sleep(0.3)
                continue
            return r

    def _once(self, method, path, data, headers, sign, query, client_request_id):
        target = f"/{self.account}{path}"
        date = email.utils.formatdate(time.time() - (1200 if sign == "stale" else 0), usegmt=True)
        h = {"x-ms-version": "2019-02-02", "Accept": "application/json;odata=minimalmetadata",
             "DataServiceVersion": "3.0", "x-ms-date": date, "x-ms-client-request-id": client_request_id}
        if data and "Content-Type" not in headers:
            h["Content-Type"] = "application/json"
        h.update(headers)
        if sign in ("key", "bad", "stale"):
            to_sign = f"{method}\n\n{h.get('Content-Type', '')}\n{date}\n/{self.account}{target}"
            key = self.key if sign != "bad" else hashlib.sha256(b"not the account key").digest()
            sig = base64.b64encode(hmac.new(key, to_sign.encode(), hashlib.sha256).digest()).decode()
            h["Authorization"] = f"SharedKey {self.account}:{sig}"
        elif sign != "none":
            query = f"{query}&{sign}" if query else sign
        conn = http.client.HTTPConnection(self.host, self.port, timeout=15)
        try:
            conn.request(method, target + (f"?{query}" if query else ""), body=data.encode() or None, headers=h)
            res = conn.getresponse()
            return Reply(res.status, res.getheaders(), res.read().decode())
        finally:
            conn.close()

    # The operations, as docs/rest.md serves them.
    def create_table(self, name, **kw):
        return self.call("POST", "/Tables", {"TableName": name}, **kw)

    def insert(self, table, entity, **kw):
        return self.call("POST", f"/{table}", entity, **kw)

    def get(self, table, pk, rk, **kw):
        return self.call("GET", f"/{table}({key(pk, rk)})", **kw)

    def query(self, table, params, **kw):
        return self.call("GET", f"/{table}()", query=urllib.parse.urlencode(params, quote_via=urllib.parse.quote),
                         **kw)


def key(pk, rk):
    return f"PartitionKey='{pk}',RowKey='{rk}'"


def batch_body(host, table, ops, account=ACCOUNT):
    """A $batch of one changeset: ops are (method, pk, rk or None, body, headers)."""
    b = "--batch_b1\r\nContent-Type: multipart/mixed; boundary=changeset_c1\r\n\r\n"
    for method, pk, rk, body, headers in ops:
        url = f"http://{host}/{account}/{table}" + (f"({key(pk, rk)})" if rk is not None else "")
        b += "--changeset_c1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
        b += f"{method} {url} HTTP/1.1\r\nAccept: application/json;odata=minimalmetadata\r\n"
        b += "Content-Type: application/json\r\n"
        b += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        b += "\r\n" + (json.dumps(body) if body is not None else "") + "\r\n"
    return b + "--changeset_c1--\r\n--batch_b1--\r\n"


def table_sas(table, permissions, expiry_s=600, account=ACCOUNT, key=KEY, **bounds):
    """A table SAS signed with the account key (docs/rest.md, "Authentication")."""
    q = {"sv": "2019-02-02", "tn": table, "sp": permissions,
         "se": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + expiry_s))}
    q.update(bounds)
    to_sign = "\n".join([q["sp"], "", q["se"], f"/table/{account}/{table.lower()}", "", "", "", q["sv"],
                         q.get("spk", ""), q.get("srk", ""), q.get("epk", ""), q.get("erk", "")])
    q["sig"] = base64.b64encode(hmac.new(key, to_sign.encode(), hashlib.sha256).digest()).decode()
    return urllib.parse.urlencode(q, quote_via=urllib.parse.quote)


def start_cluster(cls, config, account=ACCOUNT, key=KEY):
    """The mock and two members with `config` and --rest, their clean-up
    registered on `cls`; sets cls.members, cls.owner (shard -> member),
    cls.m1 and cls.m2 (their REST endpoints)."""
    started = time.time()
    cls.dir = tempfile.TemporaryDirectory(prefix="rest-cluster-test-")
    cls.addClassCleanup(cls.dir.cleanup)
    path = lambda name: os.path.join(cls.dir.name, name)  # noqa: E731
    if callable(config):
        config = config(path)
    mock = local_cluster.start_mock(MOCK, ["--port", "0", "--log-level", "warn",
                                           "--topic", f"sidetable.demo.changes={SHARDS}",
                                           "--topic", "sidetable.demo.cluster=1",
                                           "--topic", f"sidetable.demo.state={SHARDS}"], path("mock.log"))
    cls.addClassCleanup(local_cluster.stop, mock, timeout=20)
    bootstrap = mock.stdout.readline().strip()
    assert bootstrap, f"the mock did not start (exit {mock.poll()})"
    # Both members at once: the group then forms with both in its first
    # round, instead of a cooperative rebalance in two rounds after it.
    procs = []
    for name in ("m1", "m2"):
        p = local_cluster.start_member(
            SIDETABLE, ["--config", config, "--kafka", bootstrap, "--id", name, "--listen", "tcp://127.0.0.1:*",
                        "--http", "127.0.0.1:0", "--rest", "127.0.0.1:0", "--data", path(name),
                        "--ready-file", path(f"{name}.ready")], path(f"{name}.log"))
        cls.addClassCleanup(local_cluster.stop, p)
        procs.append((name, p))
    cls.members = []
    for name, p in procs:
        got = local_cluster.read_ready(path(f"{name}.ready"), 60, p)
        if got is None:
            with open(path(f"{name}.log")) as f:
                raise AssertionError(f"{name} did not start: {f.read()[-3000:]}")
        d = dict(got)
        cls.members.append({"name": name, "http": d["http"], "rest": Rest(d["rest"], name, account, key),
                            "proc": p})
    states = local_cluster.wait_stable(cls.members, SHARDS, 45)
    cls.owner = {s: m["name"] for m, st in zip(cls.members, states) for s in st["serving"]}
    cls.m1, cls.m2 = (m["rest"] for m in cls.members)
    print(f"\n{cls.__name__}: cluster stable after {time.time() - started:.1f} s; owners {cls.owner}", flush=True)


class ClusterCase(unittest.TestCase):
    """What the cases below share: keys by owner, errors, entities."""

    def setUp(self):
        self.started = time.time()
        # The owners as they are now (a loaded machine's late rebalance may
        # have moved shards since the cluster was first stable): each case
        # picks its keys by them.
        states = local_cluster.wait_stable(self.members, SHARDS, 30)
        type(self).owner = {s: m["name"] for m, st in zip(self.members, states) for s in st["serving"]}

    def tearDown(self):
        print(f"{self.id().rsplit('.', 1)[1]}: {time.time() - self.started:.1f} s, "
              f"{Rest.retries} ServerBusy retries so far", flush=True)

    # ---- helpers ----------------------------------------------------------------------

    def keys_owned_by(self, table, member, n, prefix="p"):
        """n PartitionKeys of `table` whose shards `member` serves."""
        out = []
        for i in range(1000):
            pk = f"{prefix}{i:03d}"
            if self.owner[local_cluster.shard_of(table, pk, SHARDS)] == member:
                out.append(pk)
                if len(out) == n:
                    return out
        raise AssertionError(f"no {n} keys of {member}")

    def forwarded(self, member):
        return local_cluster.metric(member["http"], "sidetable_cluster_forwarded_total")

    def new_table(self, name):
        r = self.m1.create_table(name)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json()["TableName"], name)
        # Created through m1, which answers once it has read its table
        # record back; m2 lists it once it has read it too (bounded).
        until = time.time() + 10
        while self.m2.call("GET", f"/Tables('{name}')").status != 200 and time.time() < until:
            time.sleep(0.1)
        self.assertEqual(self.m2.call("GET", f"/Tables('{name}')").status, 200)

    def assert_error(self, r, status, code):
        """The service's error: status, x-ms-error-code and the odata.error body."""
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.error_code(), code, r)
        err = r.json()["odata.error"]
        self.assertEqual(err["code"], code, r)
        self.assertEqual(err["message"]["lang"], "en-US")
        self.assertIn("\nRequestId:", err["message"]["value"])
        self.assertIn("x-ms-request-id", r.headers)

    def assert_entity(self, r, pk, rk, props, etag=None):
        self.assertEqual(r.status, 200, r)
        e = r.json()
        self.assertEqual((e["PartitionKey"], e["RowKey"]), (pk, rk))
        for k, v in props.items():
            self.assertEqual(e.get(k), v, f"{k} of ({pk}, {rk}): {e}")
        self.assertEqual(e["odata.etag"], r.headers["etag"])
        if etag is not None:
            self.assertEqual(r.headers["etag"], etag)
        return e


class RestClusterTest(ClusterCase):
    """configs/sidetable.cluster.dev.yaml as it is (auth.mode off; SharedKey
    and SAS with the development account)."""

    @classmethod
    def setUpClass(cls):
        start_cluster(cls, CONFIG)


    def test_1_inserts_forwarded_to_their_owners_and_read_through_the_other_member(self):
        t = "RestOrders"
        self.new_table(t)
        theirs = self.keys_owned_by(t, "m2", 4)   # m1 forwards these to m2
        ours = self.keys_owned_by(t, "m1", 2)     # and m2 forwards these to m1 below
        m1, m2 = self.members
        before = (self.forwarded(m1), self.forwarded(m2))
        etags = {}
        for i, pk in enumerate(theirs + ours):
            r = self.m1.insert(t, {"PartitionKey": pk, "RowKey": "r1", "Total": i, "Note": f"n{i}"})
            self.assertEqual(r.status, 201, r)
            self.assertEqual(r.headers["preference-applied"], "return-content")
            etags[pk] = self.assert_entity(Reply(200, r.headers.items(), r.body), pk, "r1", {"Total": i})["odata.etag"]
        self.assertGreaterEqual(self.forwarded(m1) - before[0], len(theirs), "m1 forwarded m2's keys")
        for i, pk in enumerate(theirs + ours):
            self.assert_entity(self.m2.get(t, pk, "r1"), pk, "r1", {"Total": i, "Note": f"n{i}"}, etags[pk])
        self.assertGreaterEqual(self.forwarded(m2) - before[1], len(ours), "m2 forwarded m1's keys")

        # An insert of an existing row through either member: 409, the row as it was.
        for rest, pk in ((self.m1, theirs[0]), (self.m2, ours[0])):
            r = rest.insert(t, {"PartitionKey": pk, "RowKey": "r1", "Total": 99})
            self.assert_error(r, 409, "EntityAlreadyExists")
            other = self.m2 if rest is self.m1 else self.m1
            self.assert_entity(other.get(t, pk, "r1"), pk, "r1", {"Total": (theirs + ours).index(pk)}, etags[pk])
        # A retry (the same x-ms-client-request-id) through the other member
        # is answered with the first outcome, not 409: the owner remembers it.
        pk = theirs[1]
        once = {"x-ms-client-request-id": "rest-cluster-retry-1"}
        first = self.m1.insert(t, {"PartitionKey": pk, "RowKey": "retried", "V": 1}, headers=once)
        self.assertEqual(first.status, 201, first)
        again = self.m2.insert(t, {"PartitionKey": pk, "RowKey": "retried", "V": 1}, headers=once)
        self.assertEqual(again.status, 201, again)
        self.assertEqual(again.headers["etag"], first.headers["etag"])
        # The table named in another case: the shard is the created name's.
        r = self.m2.insert(t.lower(), {"PartitionKey": ours[1], "RowKey": "lower", "V": 2})
        self.assertEqual(r.status, 201, r)
        self.assert_entity(self.m1.get(t, ours[1], "lower"), ours[1], "lower", {"V": 2}, r.headers["etag"])
        for rest in (self.m1, self.m2):
            names = [x["TableName"] for x in rest.call("GET", "/Tables").json()["value"]]
            self.assertIn(t, names, f"tables listed through {rest.name}")
        # A row that is not there, on another member's shard: 404 ResourceNotFound.
        self.assert_error(self.m1.get(t, theirs[0], "nope"), 404, "ResourceNotFound")
        # A table that is not there, on another member's shard: 404 TableNotFound.
        self.assert_error(self.m1.get("NoSuchTable", theirs[0], "r1"), 404, "TableNotFound")

    def test_2_query_with_filter_and_continuation_over_both_members(self):
        t = "RestQuery"
        self.new_table(t)
        pks = sorted(self.keys_owned_by(t, "m1", 3) + self.keys_owned_by(t, "m2", 3))
        written = []
        for pk in pks:
            for rk in ("a", "b", "c"):
                r = self.m1.call("PUT", f"/{t}({key(pk, rk)})", {"Amount": len(written)})  # InsertOrReplace
                self.assertEqual(r.status, 204, r)
                written.append((pk, rk, len(written)))
        expected = [w for w in written if w[2] >= 1 and w[1] != "a"]
        # Through m2, 4 rows a page: a fan-out over both members each time.
        got, pages, params = [], 0, {"$filter": "Amount ge 1 and RowKey ne 'a'", "$top": "4"}
        while True:
            r = self.m2.query(t, params)
            self.assertEqual(r.status, 200, r)
            page = r.json()
            self.assertIn("odata.metadata", page)
            self.assertLessEqual(len(page["value"]), 4)
            got += [(e["PartitionKey"], e["RowKey"], e["Amount"]) for e in page["value"]]
            pages += 1
            self.assertLess(pages, 20, "continuation does not end")
            npk = r.headers.get("x-ms-continuation-nextpartitionkey")
            if npk is None:
                self.assertNotIn("x-ms-continuation-nextrowkey", r.headers)
                break
            params = {"$filter": params["$filter"], "$top": "4", "NextPartitionKey": npk}
            if "x-ms-continuation-nextrowkey" in r.headers:
                params["NextRowKey"] = r.headers["x-ms-continuation-nextrowkey"]
        self.assertEqual(got, expected, "every matching row once, in (PartitionKey, RowKey) order")
        self.assertGreaterEqual(pages, 3)
        # A query confined to one partition another member owns (forwarded whole).
        pk = self.keys_owned_by(t, "m2", 1)[0]
        r = self.m1.query(t, {"$filter": f"PartitionKey eq '{pk}'", "$select": "RowKey,Amount"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual([(e["RowKey"], e["Amount"]) for e in r.json()["value"]],
                         [(rk, a) for p, rk, a in written if p == pk])
        # A $select without the keys over both members: only what was
        # selected, in key order, paged.
        got, params = [], {"$select": "Amount", "$top": "7"}
        for _ in range(10):
            r = self.m1.query(t, params)
            self.assertEqual(r.status, 200, r)
            for e in r.json()["value"]:
                self.assertEqual(sorted(k for k in e if not k.startswith("odata.")), ["Amount"], e)
                got.append(e["Amount"])
            if "x-ms-continuation-nextpartitionkey" not in r.headers:
                break
            params = {"$select": "Amount", "$top": "7",
                      "NextPartitionKey": r.headers["x-ms-continuation-nextpartitionkey"],
                      "NextRowKey": r.headers.get("x-ms-continuation-nextrowkey", "")}
        self.assertEqual(got, [a for _, _, a in written])
        # Bad queries, answered the same through either member.
        for rest in (self.m1, self.m2):
            self.assert_error(rest.query(t, {"$filter": "Amount gt"}), 400, "InvalidInput")
            self.assert_error(rest.query(t, {"$top": "1001"}), 400, "InvalidInput")
            self.assert_error(rest.query("NoSuchTable", {}), 404, "TableNotFound")

    def test_3_stale_etag_is_412_and_changes_nothing(self):
        t = "RestEtags"
        self.new_table(t)
        pk = self.keys_owned_by(t, "m2", 1)[0]
        r = self.m1.insert(t, {"PartitionKey": pk, "RowKey": "r", "V": 1})
        self.assertEqual(r.status, 201, r)
        first = r.headers["etag"]
        r = self.m1.call("PUT", f"/{t}({key(pk, 'r')})", {"V": 2}, headers={"If-Match": first})
        self.assertEqual(r.status, 204, r)
        second = r.headers["etag"]
        self.assertNotEqual(first, second)
        # The first ETag is stale now: Update, Merge and Delete refuse it.
        for method, body in (("PUT", {"V": 3}), ("MERGE", {"W": 3}), ("PATCH", {"W": 4}), ("DELETE", None)):
            r = self.m1.call(method, f"/{t}({key(pk, 'r')})", body, headers={"If-Match": first})
            self.assert_error(r, 412, "UpdateConditionNotSatisfied")
        e = self.assert_entity(self.m2.get(t, pk, "r"), pk, "r", {"V": 2}, second)
        self.assertNotIn("W", e)
        # Conditional on a missing row: 404, and still nothing written.
        r = self.m1.call("PUT", f"/{t}({key(pk, 'missing')})", {"V": 1}, headers={"If-Match": "*"})
        self.assert_error(r, 404, "ResourceNotFound")
        self.assert_error(self.m2.get(t, pk, "missing"), 404, "ResourceNotFound")
        # The current ETag through the other member: merged.
        r = self.m2.call("MERGE", f"/{t}({key(pk, 'r')})", {"W": 5}, headers={"If-Match": second})
        self.assertEqual(r.status, 204, r)
        self.assert_entity(self.m1.get(t, pk, "r"), pk, "r", {"V": 2, "W": 5}, r.headers["etag"])

    def test_4_batch_in_a_partition_another_member_owns(self):
        t = "RestBatch"
        self.new_table(t)
        pk = self.keys_owned_by(t, "m2", 1)[0]
        for rk in ("upd", "del", "mrg"):
            self.assertEqual(self.m1.insert(t, {"PartitionKey": pk, "RowKey": rk, "V": 1}).status, 201)
        etag = self.m2.get(t, pk, "upd").headers["etag"]
        host = f"{self.m1.host}:{self.m1.port}"
        ct = {"Content-Type": "multipart/mixed; boundary=batch_b1"}
        r = self.m1.call("POST", "/$batch", batch_body(host, t, [
            ("POST", pk, None, {"PartitionKey": pk, "RowKey": "new", "V": 2}, {}),
            ("PUT", pk, "upd", {"V": 3}, {"If-Match": etag}),
            ("MERGE", pk, "mrg", {"W": 4}, {"If-Match": "*"}),
            ("DELETE", pk, "del", None, {"If-Match": "*"}),
            ("PUT", pk, "ups", {"V": 5}, {}),
        ]), headers=ct)
        self.assertEqual(r.status, 202, r)
        self.assertIn("multipart/mixed; boundary=batchresponse_", r.headers["content-type"])
        self.assertEqual(r.body.count("HTTP/1.1 201 Created"), 1, r.body)
        self.assertEqual(r.body.count("HTTP/1.1 204 No Content"), 4, r.body)
        rows = {e["RowKey"]: e for e in self.m2.query(t, {"$filter": f"PartitionKey eq '{pk}'"}).json()["value"]}
        self.assertEqual(sorted(rows), ["mrg", "new", "upd", "ups"])
        self.assertEqual((rows["upd"]["V"], rows["mrg"]["V"], rows["mrg"]["W"], rows["new"]["V"]), (3, 1, 4, 2))
        # The EGT is one commit: every row it wrote has the same ETag.
        self.assertEqual(len({rows[k]["odata.etag"] for k in ("new", "upd", "mrg", "ups")}), 1)

        # A changeset whose third operation fails (the stale ETag): 202 with
        # one part, 412 and its index; nothing of it applied.
        before = {k: v["odata.etag"] for k, v in rows.items()}
        r = self.m1.call("POST", "/$batch", batch_body(host, t, [
            ("POST", pk, None, {"PartitionKey": pk, "RowKey": "never", "V": 6}, {}),
            ("DELETE", pk, "ups", None, {"If-Match": "*"}),
            ("PUT", pk, "upd", {"V": 7}, {"If-Match": etag}),
        ]), headers=ct)
        self.assertEqual(r.status, 202, r)
        self.assertIn("HTTP/1.1 412 Precondition Failed", r.body)
        self.assertIn('"code":"UpdateConditionNotSatisfied"', r.body)
        self.assertIn('"value":"2:', r.body)
        self.assertNotIn("HTTP/1.1 201", r.body)
        after = {e["RowKey"]: e["odata.etag"]
                 for e in self.m2.query(t, {"$filter": f"PartitionKey eq '{pk}'"}).json()["value"]}
        self.assertEqual(after, before, "a failed changeset applies nothing")
        # Two partitions in one changeset: refused whole.
        other = self.keys_owned_by(t, "m1", 1)[0]
        r = self.m1.call("POST", "/$batch", batch_body(host, t, [
            ("POST", pk, None, {"PartitionKey": pk, "RowKey": "x1"}, {}),
            ("POST", other, None, {"PartitionKey": other, "RowKey": "x2"}, {}),
        ]), headers=ct)
        self.assertIn("CommandsInBatchActOnDifferentPartitions", r.body)
        self.assert_error(self.m2.get(t, pk, "x1"), 404, "ResourceNotFound")
        self.assert_error(self.m2.get(t, other, "x2"), 404, "ResourceNotFound")

    def test_5_deletes_through_the_other_member(self):
        t = "RestDeletes"
        self.new_table(t)
        pks = self.keys_owned_by(t, "m1", 1) + self.keys_owned_by(t, "m2", 1)
        etags = {}
        for pk in pks:
            r = self.m1.insert(t, {"PartitionKey": pk, "RowKey": "r"})
            self.assertEqual(r.status, 201, r)
            etags[pk] = r.headers["etag"]
        for pk in pks:
            self.assert_error(self.m2.call("DELETE", f"/{t}({key(pk, 'r')})"), 400, "MissingRequiredHeader")
            self.assertEqual(self.m1.get(t, pk, "r").status, 200, "a refused delete deleted nothing")
            r = self.m2.call("DELETE", f"/{t}({key(pk, 'r')})", headers={"If-Match": etags[pk]})
            self.assertEqual(r.status, 204, r)
            self.assert_error(self.m1.get(t, pk, "r"), 404, "ResourceNotFound")
            self.assert_error(self.m1.call("DELETE", f"/{t}({key(pk, 'r')})", headers={"If-Match": "*"}),
                              404, "ResourceNotFound")
        r = self.m2.call("DELETE", f"/Tables('{t}')")
        self.assertEqual(r.status, 204, r)
        until = time.time() + 10
        while self.m1.call("GET", f"/Tables('{t}')").status == 200 and time.time() < until:
            time.sleep(0.1)
        self.assert_error(self.m1.call("GET", f"/Tables('{t}')"), 404, "TableNotFound")
        self.assert_error(self.m1.insert(t, {"PartitionKey": pks[1], "RowKey": "r"}), 404, "TableNotFound")

    def test_6_unsigned_or_badly_signed_requests_are_refused_on_every_member(self):
        t = "RestAuth"
        self.new_table(t)
        theirs = self.keys_owned_by(t, "m2", 2)
        r = self.m1.insert(t, {"PartitionKey": theirs[0], "RowKey": "r", "V": 1})
        self.assertEqual(r.status, 201, r)
        etag = r.headers["etag"]

        # Unsigned, signed with another key, or dated 20 minutes ago: 403 on
        # every member, for a key another member owns, and nothing written.
        for sign in ("none", "bad", "stale"):
            for rest in (self.m1, self.m2):
                with self.subTest(sign=sign, member=rest.name):
                    self.assert_error(rest.insert(t, {"PartitionKey": theirs[1], "RowKey": sign}, sign=sign),
                                      403, "AuthenticationFailed")
                    self.assert_error(rest.get(t, theirs[0], "r", sign=sign), 403, "AuthenticationFailed")
                    self.assert_error(rest.call("PUT", f"/{t}({key(theirs[0], 'r')})", {"V": 9},
                                                headers={"If-Match": "*"}, sign=sign), 403, "AuthenticationFailed")
        for rest in (self.m1, self.m2):
            self.assert_error(rest.get(t, theirs[1], "none"), 404, "ResourceNotFound")
            self.assert_entity(rest.get(t, theirs[0], "r"), theirs[0], "r", {"V": 1}, etag)

    def test_7_a_read_only_sas_writes_nothing_on_any_member(self):
        # Before session 46 a request forwarded to its owner lost the SAS's
        # scope: this SAS inserted and updated every key m2 owned.
        t = "RestSasRead"
        self.new_table(t)
        theirs = self.keys_owned_by(t, "m2", 2)
        ours = self.keys_owned_by(t, "m1", 1)
        r = self.m1.insert(t, {"PartitionKey": theirs[0], "RowKey": "r", "V": 1})
        self.assertEqual(r.status, 201, r)
        etag = r.headers["etag"]
        # Reads through either member; every write refused 403
        # AuthorizationPermissionMismatch, whichever member owns the key,
        # and nothing written.
        read_only = table_sas(t, "r")
        self.assert_entity(self.m1.get(t, theirs[0], "r", sign=read_only), theirs[0], "r", {"V": 1}, etag)
        for rest in (self.m1, self.m2):
            for pk in (theirs[1], ours[0]):
                with self.subTest(sas="r", member=rest.name, pk=pk):
                    self.assert_error(rest.insert(t, {"PartitionKey": pk, "RowKey": "sas"}, sign=read_only),
                                      403, "AuthorizationPermissionMismatch")
            self.assert_error(rest.call("PUT", f"/{t}({key(theirs[0], 'r')})", {"V": 9},
                                        headers={"If-Match": "*"}, sign=read_only),
                              403, "AuthorizationPermissionMismatch")
            self.assert_error(rest.call("DELETE", f"/{t}({key(theirs[0], 'r')})", headers={"If-Match": "*"},
                                        sign=read_only), 403, "AuthorizationPermissionMismatch")
        for pk in (theirs[1], ours[0]):
            self.assert_error(self.m2.get(t, pk, "sas"), 404, "ResourceNotFound")
        self.assert_entity(self.m2.get(t, theirs[0], "r"), theirs[0], "r", {"V": 1}, etag)

    def test_8_a_key_range_sas_is_confined_on_every_member(self):
        # Before session 46 the parts of a query that other members ran were
        # not confined: through m1 this SAS listed m2's other partitions,
        # through m2 m1's, and it wrote outside its range on m2's shards.
        t = "RestSasRange"
        self.new_table(t)
        theirs = self.keys_owned_by(t, "m2", 2)
        ours = self.keys_owned_by(t, "m1", 1)
        for pk in theirs + ours:
            self.assertEqual(self.m1.insert(t, {"PartitionKey": pk, "RowKey": "r"}).status, 201)
        # Confined to one partition m2 owns: queries and reads see only that
        # partition, through either member; writes inside it pass, outside
        # it 403 AuthorizationFailure.
        ranged = table_sas(t, "rau", spk=theirs[0], epk=theirs[0])
        for rest in (self.m1, self.m2):
            with self.subTest(member=rest.name):
                r = rest.query(t, {}, sign=ranged)
                self.assertEqual(r.status, 200, r)
                self.assertEqual(sorted((e["PartitionKey"], e["RowKey"]) for e in r.json()["value"]),
                                 [(theirs[0], "r")], f"a query through {rest.name}")
        r = self.m1.insert(t, {"PartitionKey": theirs[0], "RowKey": "in"}, sign=ranged)
        self.assertEqual(r.status, 201, r)
        for rest in (self.m1, self.m2):
            with self.subTest(member=rest.name):
                self.assert_error(rest.insert(t, {"PartitionKey": theirs[1], "RowKey": "out"}, sign=ranged),
                                  403, "AuthorizationFailure")
                self.assert_error(rest.get(t, ours[0], "r", sign=ranged), 403, "AuthorizationFailure")
                self.assert_error(rest.get(t, theirs[1], "r", sign=ranged), 403, "AuthorizationFailure")
                self.assertEqual(sorted(e["RowKey"] for e in rest.query(t, {}, sign=ranged).json()["value"]),
                                 ["in", "r"])
        self.assert_error(self.m2.get(t, theirs[1], "out"), 404, "ResourceNotFound")


TENANT = "tenant1"
TENANT_KEY = hashlib.sha256(b"rest-cluster-test tenant1").digest()


def tokens_config(path):
    """configs/sidetable.cluster.dev.yaml with auth.mode tokens (one signing
    key, the same on both members, as docs/scale-out.md requires) and a REST
    account of its own (the development account is off with tokens): the
    file as it is, with the two sections it leaves out appended."""
    key_file = path("k1.key")
    with open(os.open(key_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(base64.b64encode(hashlib.sha256(b"rest-cluster-test signing key").digest()).decode())
    with open(CONFIG) as f:
        config = f.read()
    assert "\nauth:" not in config and "\nrest:" not in config, "the file now has auth: or rest:"
    config += (f"\nauth:\n  mode: tokens\n  keys:\n    - {{id: k1, file: {json.dumps(key_file)}}}\n"
               f"rest:\n  accounts:\n    - {{name: {TENANT}, key: {json.dumps(base64.b64encode(TENANT_KEY).decode())}}}\n")
    out = path("sidetable.tokens.yaml")
    with open(out, "w") as f:
        f.write(config)
    return out


class RestClusterTokensTest(ClusterCase):
    """The same file with auth.mode tokens: a SharedKey request stands for
    a token of its whole account, a SAS for a token of its scope, and the
    owner of a forwarded request verifies that token again (before session
    46 forwarded REST requests carried none: every one was refused)."""

    @classmethod
    def setUpClass(cls):
        start_cluster(cls, tokens_config, TENANT, TENANT_KEY)

    def test_shared_key_and_sas_through_forwarding(self):
        t = "RestTokens"
        self.new_table(t)
        theirs = self.keys_owned_by(t, "m2", 2)
        ours = self.keys_owned_by(t, "m1", 1)
        for i, pk in enumerate(theirs + ours):
            r = self.m1.insert(t, {"PartitionKey": pk, "RowKey": "r", "V": i})
            self.assertEqual(r.status, 201, r)
            self.assert_entity(self.m2.get(t, pk, "r"), pk, "r", {"V": i}, r.headers["etag"])
        r = self.m2.query(t, {"$filter": "V ge 0"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(sorted(e["PartitionKey"] for e in r.json()["value"]), sorted(theirs + ours))
        host = f"{self.m1.host}:{self.m1.port}"
        r = self.m1.call("POST", "/$batch", batch_body(host, t, [
            ("POST", theirs[0], None, {"PartitionKey": theirs[0], "RowKey": "b1"}, {}),
            ("MERGE", theirs[0], "r", {"W": 1}, {"If-Match": "*"}),
        ], TENANT), headers={"Content-Type": "multipart/mixed; boundary=batch_b1"})
        self.assertEqual(r.status, 202, r)
        self.assertEqual(r.body.count("HTTP/1.1 20"), 2, r.body)
        self.assert_entity(self.m2.get(t, theirs[0], "r"), theirs[0], "r", {"V": 0, "W": 1})

        # Refused on every member: no signature, another account's key.
        dev = Rest(f"{self.m1.host}:{self.m1.port}", "m1 as devstoreaccount1")
        self.assert_error(dev.get(t, theirs[0], "r"), 403, "AuthenticationFailed")
        for rest in (self.m1, self.m2):
            self.assert_error(rest.insert(t, {"PartitionKey": theirs[1], "RowKey": "x"}, sign="none"),
                              403, "AuthenticationFailed")
            self.assert_error(rest.insert(t, {"PartitionKey": theirs[1], "RowKey": "x"}, sign="bad"),
                              403, "AuthenticationFailed")
        # A read-only SAS reads a forwarded key and writes none.
        read_only = table_sas(t, "r", account=TENANT, key=TENANT_KEY)
        self.assert_entity(self.m1.get(t, theirs[0], "r", sign=read_only), theirs[0], "r", {"V": 0})
        for rest in (self.m1, self.m2):
            self.assert_error(rest.insert(t, {"PartitionKey": theirs[1], "RowKey": "x"}, sign=read_only),
                              403, "AuthorizationPermissionMismatch")
        # A SAS confined to a partition m2 owns: its query through m1 (a
        # fan-out) sees only that partition; a write outside it is refused.
        ranged = table_sas(t, "ra", account=TENANT, key=TENANT_KEY, spk=theirs[0], epk=theirs[0])
        r = self.m1.query(t, {}, sign=ranged)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(sorted(e["RowKey"] for e in r.json()["value"]), ["b1", "r"])
        self.assert_error(self.m1.insert(t, {"PartitionKey": theirs[1], "RowKey": "x"}, sign=ranged),
                          403, "AuthorizationFailure")
        self.assert_error(self.m2.get(t, theirs[1], "x"), 404, "ResourceNotFound")


if __name__ == "__main__":
    unittest.main()
