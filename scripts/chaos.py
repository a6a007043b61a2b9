#!/usr/bin/env python3
"""chaos.py: a fault campaign against a real sidetable sidecar (not run in CI).

Each round runs a writer load of entity group transactions (EGTs) against one
sidecar process, injects one randomly chosen fault at a random moment, then
checks what the clients were promised: every acknowledged EGT is present in
full, no EGT is present in part, the change log has no LSN gaps, and every
request sent to a live process was answered.  One data directory serves the
whole campaign, so state carries over rounds as it does in production.

  scripts/chaos.sh --rounds 8 --duration-per-round 2
  scripts/chaos.sh --faults kill9,sigterm --seed 7 --json --keep

Faults: kill9, sigterm, flood, big-write, bad-strings, disk-full (root only:
the data directory lives on a tmpfs that a filler file fills).  kafka-outage
is not offered: the embedded cluster can only be taken down from inside the
sidecar process (rd_kafka_mock_broker_set_down), and this machine has neither
iptables/nft nor tc's drop action to cut its loopback port from outside.

Table, one row per fault kind and a total: egts/ents acknowledged; lost
(acknowledged entities missing); part (EGTs present in part, acknowledged or
not); phan (EGTs answered with an error yet present); unans (no reply within
--request-timeout from a live process not being stopped); cut9/cutT (in flight
when we sent SIGKILL/SIGTERM); gaps (LSN gaps in the change log); logbad
(acknowledged commits missing or different in the log); stuck (no write
succeeded for 30 s after the fault: killed and restarted); unchk (gets or log
reads that failed, so something went unchecked); rssMiB (max VmHWM); recov ms
(median/max from restart, or from the end of the fault's own requests, to
the first successful write); term ms (SIGTERM to exit); klag (unpublished
LSNs 3 s after the round: the Kafka stream stalled).  Then error replies by
code.  A final pass re-reads every EGT acknowledged during the campaign.

Exit code 1 if anything was lost, partial, a gap, a bad log record or left
unchecked; else 0.
"""
import argparse, collections, errno, itertools, json, os, random, shutil, signal
import statistics, subprocess, sys, tempfile, threading, time, urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "client", "python"))
import msgpack  # noqa: E402
import zmq  # noqa: E402
import sidetable  # noqa: E402
from sidetable import wire  # noqa: E402

TABLE = "chaos"
ALL_FAULTS = ["kill9", "sigterm", "flood", "big-write", "bad-strings", "disk-full"]
RESTARTING = {"kill9", "sigterm"}
now = time.monotonic
BLOB = os.urandom(64000)           # incompressible padding for large entities
EGTS = {}                          # egt id -> {"keys", "status", "lsn", "round"}
ARGS = None
PROBES = itertools.count()         # probe EGT ids, unique over the campaign


def log(msg):
    print(msg, flush=True)


class Sidecar:
    """The process under test, found through its ready file."""

    def __init__(self, binary, data, workdir, extra):
        self.binary, self.data, self.extra = binary, data, extra
        self.ready = os.path.join(workdir, "ready")
        self.logfile = os.path.join(workdir, "sidecar.log")
        self.proc = self.endpoint = self.http = None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout=30.0):
        if os.path.exists(self.ready):
            os.unlink(self.ready)
        cmd = [self.binary, "--data", self.data, "--ready-file", self.ready,
               "--http", "127.0.0.1:0", "--listen", "tcp://127.0.0.1:*",
               "--log-level", "info"] + self.extra
        with open(self.logfile, "ab") as out:
            # Own session: a Ctrl-C in the terminal reaches us, and we decide.
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=out,
                                         stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        limit = now() + timeout
        while now() < limit:
            if self.proc.poll() is not None:
                raise RuntimeError("sidecar exited %d at start-up (see %s)"
                                   % (self.proc.returncode, self.logfile))
            try:
                with open(self.ready) as f:      # renamed into place whole
                    info = dict(l.split(" ", 1) for l in f.read().split("\n") if " " in l)
            except FileNotFoundError:
                info = {}
            if "pid" in info and "zmq" in info:
                self.endpoint, self.http = info["zmq"], info.get("http")
                return
            time.sleep(0.02)
        self.stop(signal.SIGKILL)
        raise RuntimeError("no ready file within %.0f s" % timeout)

    def hwm_mib(self):
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024.0
        except (OSError, AttributeError):
            pass
        return 0.0

    def stop(self, sig, wait=30.0):
        """Signal and wait; (exit code or None if it had to be killed, ms)."""
        if not self.alive():
            return (self.proc.returncode if self.proc else None), 0.0
        t0 = now()
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            rc = None
        return rc, (now() - t0) * 1000


class Round:
    def __init__(self, index, fault):
        self.index, self.fault = index, fault
        self.requests = []             # [egt id or None, sent_at, status, code]
        self.egts = []
        self.rss = 0.0
        self.signal_at, self.signal_kind = None, None
        self.recover_ms = self.term_ms = None
        self.dead = threading.Event()
        self.kafka_lag = None
        self.notes = []
        self.c = collections.Counter()  # lost, partial, phantom, gaps, ...
        self.errors = collections.Counter()


def track(rnd, tag, n):
    """Registers an EGT of n entities in one partition; (id, pk, row keys)."""
    egt = "r%d-%s" % (rnd.index, tag)
    rks = ["%s-%d" % (egt, i) for i in range(n)]
    EGTS[egt] = {"keys": [("p-" + egt, rk) for rk in rks], "status": None,
                 "lsn": None, "round": rnd.index}
    rnd.egts.append(egt)
    return egt, "p-" + egt, rks


def new_egt(rnd, tag, n, blob_props=0):
    """A Batch of n Inserts in one partition, all carrying the EGT's id."""
    egt, pk, rks = track(rnd, tag, n)
    b = sidetable.Batch(TABLE)
    for i, rk in enumerate(rks):
        props = {"egt": egt, "i": i, "pad": "x" * 100}
        for j in range(blob_props):          # distinct 64,000-byte values
            props["b%d" % j] = BLOB[j:] + BLOB[:j]
        b.insert(sidetable.Entity(pk, rk, props))
    return egt, b


def settle(rnd, rec, h):
    """Records the outcome of a finished handle."""
    err = h.exception()
    if err is None:
        rec[2] = 200
        if rec[0]:
            EGTS[rec[0]]["status"], EGTS[rec[0]]["lsn"] = 200, h.result().lsn
    elif err.status is not None:       # an error reply (a time-out has none)
        rec[2], rec[3] = err.status, err.code
        rnd.errors[err.code] += 1
        if rec[0]:
            EGTS[rec[0]]["status"] = err.status


def drive(endpoint, rnd, jobs, window, stop, deadline, caller):
    """Sends EGTs from `jobs` keeping `window` in flight until stop/deadline,
    then waits for the replies (each bounded by the request time-out)."""
    c = sidetable.Client(endpoint, timeout=ARGS.request_timeout, retries=0,
                         caller=caller)
    pending, exhausted = collections.deque(), False
    try:
        while True:
            while (len(pending) < window and not exhausted and not stop.is_set()
                   and now() < deadline):
                job = next(jobs, None)
                if job is None:
                    exhausted = True
                    break
                egt, batch = job
                rec = [egt, now(), None, None]
                rnd.requests.append(rec)
                pending.append((c.send("execute", batch), rec))
            if not pending:
                if stop.is_set() or now() >= deadline or exhausted:
                    return
                continue
            if rnd.dead.is_set():
                # The process is gone: read what it answered, give up the rest.
                try:
                    c.gather([h for h, _ in pending], return_exceptions=True, timeout=0.3)
                except sidetable.SidetableTimeout:
                    pass
                for h, rec in pending:
                    if h.done():
                        settle(rnd, rec, h)
                return
            try:
                pending[0][0].result(timeout=0.05)
            except sidetable.SidetableError:
                pass
            for item in [p for p in pending if p[0].done()]:
                pending.remove(item)
                settle(rnd, item[1], item[0])
    finally:
        c.close()


def writer_jobs(rnd, wid, rng):
    seq = 0
    while True:
        seq += 1
        yield new_egt(rnd, "w%d-%d" % (wid, seq), rng.randint(1, 5))


def bad_strings(sc, rnd):
    """Invalid UTF-8 and oversized strings through raw frames: the client
    refuses to send them, so they are packed here (use_bin_type=False packs
    bytes as MessagePack str)."""
    def write(tag, caller="chaos", **props):   # a tracked one-entity EGT
        egt, pk, rks = track(rnd, "bad-" + tag, 1)
        entity = {"pk": pk, "rk": rks[0], "props": dict(egt=egt, **props)}
        return wire.WRITE, egt, {"table": TABLE, "caller": caller,
                                 "ops": [{"op": "Insert", "entity": entity}]}
    bodies = [
        write("caller", caller=b"chaos\xff\xfe"),
        write("bigcaller", caller="c" * (4 << 20)),
        write("value", s=b"bad \xc3\x28 value"),
        (wire.WRITE, None, {"table": TABLE, "ops": [{"op": "Insert", "entity": {
            "pk": b"p\xff", "rk": b"r\x80"}}]}),
        (wire.QUERY, None, {"table": TABLE, "filter": b"RowKey eq '\xc3\x28'"}),
        (wire.GET, None, {"table": b"cha\xffos", "pk": "a", "rk": "b"}),
        (wire.LIST_TABLES, None, {"filter": b"TableName eq '\xed\xa0\x80'"}),
    ]
    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(sc.endpoint)
    recs = {}
    try:
        for rid, (op, egt, body) in enumerate(bodies, 1):
            recs[rid] = [egt, now(), None, None]
            rnd.requests.append(recs[rid])
            s.send(wire.pack_header(op, rid) + msgpack.packb(body, use_bin_type=False))
        limit = now() + ARGS.request_timeout
        while any(r[2] is None for r in recs.values()) and now() < limit:
            if not rnd.dead.is_set() and s.poll(100):
                frame = s.recv()
                try:
                    _, status, rid, reply = wire.decode_reply(frame)
                    code = reply.get("code", "")
                except Exception:        # e.g. a message that is not UTF-8
                    rid, status, code = wire.unpack_header(frame)[4], 500, "UndecodableReply"
                if rid in recs:
                    recs[rid][2:] = [status, code]
                    if code:
                        rnd.errors[code] += 1
                    if recs[rid][0]:
                        EGTS[recs[rid][0]]["status"] = status
            elif rnd.dead.is_set():
                break
        for rid, r in recs.items():
            if r[2] == 200:
                rnd.notes.append("bad-strings request %d was accepted" % rid)
    finally:
        s.close()
        ctx.term()


def fill_disk(path, hold, load):
    """Fills the tmpfs, keeps it full for `hold` s while writers run, frees it."""
    filler = os.path.join(path, "filler")
    chunk = b"\0" * (4 << 20)
    with open(filler, "wb", buffering=0) as f:
        for _ in range(ARGS.tmpfs_mb // 4 + 16):     # bounded: at most the tmpfs
            try:
                f.write(chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                break
    load()
    time.sleep(hold)
    os.unlink(filler)


def inject(sc, rnd, stop, threads, deadline):
    f = rnd.fault
    rnd.rss = max(rnd.rss, sc.hwm_mib())
    if f in RESTARTING:
        stop.set()                         # no new requests from the writers
        rnd.signal_at, rnd.signal_kind = now(), f
        rc, ms = sc.stop(signal.SIGKILL if f == "kill9" else signal.SIGTERM)
        rnd.dead.set()
        if f == "sigterm":
            rnd.term_ms = ms
            if rc != 0:
                rnd.notes.append("SIGTERM exit code %s (None: killed after 30 s)" % rc)
        for t in threads:                  # writers finish before the restart
            t.join(ARGS.request_timeout + 5)
        t0 = now()
        sc.start()
        rnd.recover_ms = probe(sc, rnd, t0)
    elif f == "flood":
        flood(sc, rnd, threads, "flood", 3, 20)
    elif f == "big-write":
        # ~900 KB entity; a 4 MiB EGT just under the payload limit; one just over.
        spawn(sc, rnd, threads, [new_egt(rnd, "big1", 1, blob_props=14),
                                 new_egt(rnd, "big4m", 5, blob_props=13),
                                 new_egt(rnd, "over4m", 5, blob_props=15)], "chaos-big")
    elif f == "bad-strings":
        bad_strings(sc, rnd)
    elif f == "disk-full":
        # RocksDB preallocates its WAL, so a trickle of small writes would not
        # notice a full disk for a long time: large EGTs reach the end sooner.
        fill_disk(os.path.dirname(sc.data), 2.0,
                  lambda: flood(sc, rnd, threads, "full", 2, 40))


def flood(sc, rnd, threads, tag, conns, count):
    """`conns` extra connections each sending `count` ~512 KB EGTs at once."""
    for k in range(conns):
        spawn(sc, rnd, threads, [new_egt(rnd, "%s%d-%d" % (tag, k, i), 4, blob_props=2)
                                 for i in range(count)], "chaos-" + tag)


def spawn(sc, rnd, threads, jobs, caller):
    """A connection of its own that sends all `jobs` at once, without waiting."""
    threads.append(threading.Thread(target=drive, daemon=True, args=(
        sc.endpoint, rnd, iter(jobs), len(jobs), threading.Event(), now() + 60, caller)))
    threads[-1].start()


def probe(sc, rnd, t0, limit=30.0):
    """ms from t0 until a write succeeds; None if none did within `limit`."""
    c = sidetable.Client(sc.endpoint, timeout=2.0, retries=0, caller="chaos-probe")
    try:
        for i in range(10000):
            if now() - t0 > limit or not sc.alive():
                return None
            egt, b = new_egt(rnd, "probe%d" % next(PROBES), 1)
            try:
                EGTS[egt]["lsn"] = c.execute(b).lsn
                EGTS[egt]["status"] = 200
                return (now() - t0) * 1000
            except sidetable.SidetableError as e:
                EGTS[egt]["status"] = e.status
                time.sleep(0.05)
    finally:
        c.close()


def kafka_lag(sc, wait=3.0):
    """Unpublished LSNs after up to `wait` s, from /health (None if unknown)."""
    lag, limit = None, now() + wait
    while now() < limit:
        try:
            with urllib.request.urlopen("http://%s/health" % sc.http, timeout=2) as r:
                h = json.load(r)
            k = h.get("kafka") or {}
            if "published_lsn" not in k:
                return None
            lag = h["lsn"] - k["published_lsn"]
            if lag <= 0:
                return 0
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    return lag


def verify(sc, rnd, ids):
    """Gets every key of `ids`: lost (acknowledged but missing), partial
    (present in part), phantom (answered with an error yet present)."""
    c = sidetable.Client(sc.endpoint, timeout=10.0, retries=3, caller="chaos-verify")
    present = collections.Counter()
    todo = [(egt, pk, rk) for egt in ids for pk, rk in EGTS[egt]["keys"]]
    pending = collections.deque()
    try:
        for item in todo + [None] * 256:
            if item is not None:
                pending.append((item[0], c.send("get", TABLE, item[1], item[2], select=["egt"])))
            if len(pending) >= 256 or (item is None and pending):
                egt, h = pending.popleft()
                err = h.exception()
                if err is None and h.result().get("egt") == egt:
                    present[egt] += 1
                elif err is not None and err.code != "ResourceNotFound":
                    rnd.c["unchecked"] += 1     # the get itself failed
    finally:
        c.close()
    for egt in ids:
        n, p, st = len(EGTS[egt]["keys"]), present[egt], EGTS[egt]["status"]
        if st == 200:
            rnd.c["acked_egts"] += 1
            rnd.c["acked_entities"] += n
            rnd.c["lost"] += n - p
        if 0 < p < n:
            rnd.c["partial"] += 1
        if st is not None and st != 200 and p:
            rnd.c["phantom"] += 1


def scan_log(sc, rnd, cursor):
    """Reads the change log from `cursor`: LSN gaps, and acknowledged commits
    whose record is missing or differs (pk, op count).  Returns the new cursor."""
    by_lsn = {e["lsn"]: e for e in EGTS.values() if e["status"] == 200 and e["lsn"]}
    c = sidetable.Client(sc.endpoint, timeout=10.0, retries=3, caller="chaos-log")
    seen, prev = set(), None
    try:
        last = c.ping()["lsn"]
        for _ in range(100000):
            page = c.read_changes(cursor, max=10000, max_bytes=8 << 20)
            if page.first and page.first > cursor:     # trimmed by retention
                rnd.notes.append("log trimmed up to %d" % page.first)
                cursor = page.first
                continue
            for r in page.records:
                if prev is not None and r["lsn"] != prev + 1:
                    rnd.c["lsn_gaps"] += 1
                    rnd.notes.append("LSN gap %d -> %d" % (prev, r["lsn"]))
                prev = r["lsn"]
                seen.add(prev)
                e = by_lsn.get(prev)
                if e and (r.get("pk") != e["keys"][0][0] or len(r["ops"]) != len(e["keys"])):
                    rnd.c["log_bad"] += 1
            if not page.records or prev >= last:
                break
            cursor = prev + 1
    except sidetable.SidetableError as e:
        rnd.c["unchecked"] += 1
        rnd.notes.append("change log unreadable from LSN %d: %s" % (cursor, e))
    finally:
        c.close()
    start = min(seen) if seen else cursor
    rnd.c["log_bad"] += sum(1 for l in by_lsn if start <= l <= (prev or 0) and l not in seen
                            and by_lsn[l]["round"] == rnd.index)
    return (prev + 1) if prev is not None else cursor


def run_round(sc, rnd, rng, cursor):
    if not sc.alive():
        sc.start()
    stop, threads = threading.Event(), []
    t_start = now()
    deadline = t_start + ARGS.duration_per_round
    for w in range(4):
        threads.append(threading.Thread(target=drive, daemon=True, args=(
            sc.endpoint, rnd, writer_jobs(rnd, w, random.Random(rng.random())), 16, stop,
            deadline, "chaos-w%d" % w)))
    proc = sc.proc

    def sample():                      # VmHWM until the process goes away
        while not stop.is_set() or any(t.is_alive() for t in threads):
            rnd.rss = max(rnd.rss, sc.hwm_mib()) if sc.proc is proc else rnd.rss
            if proc.poll() is not None:
                rnd.dead.set()
                return
            time.sleep(0.1)
    for t in threads:
        t.start()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    time.sleep(max(0.0, t_start + rng.uniform(0.15, 0.7) * ARGS.duration_per_round - now()))
    inject(sc, rnd, stop, threads, deadline)
    time.sleep(max(0.0, deadline - now()))
    stop.set()
    for t in threads:
        t.join(ARGS.request_timeout + 60)
    sampler.join(5)
    t0 = now()     # non-restarting faults: from when the fault's requests are answered
    if not sc.alive() and rnd.fault not in RESTARTING:
        rnd.notes.append("exited by itself, code %s" % proc.returncode)
        sc.start()
        rnd.recover_ms = probe(sc, rnd, t0)
    elif rnd.fault not in RESTARTING:
        rnd.recover_ms = probe(sc, rnd, t0)
    if rnd.recover_ms is None:        # alive but no write succeeds: restart it
        rnd.notes.append("no write succeeded for 30 s: killed and restarted")
        rnd.c["stuck"] += 1
        rnd.rss = max(rnd.rss, sc.hwm_mib())
        sc.stop(signal.SIGKILL)
        sc.start()
        # Recovery time includes the 30 s of waiting: the operator's view.
        rnd.recover_ms = probe(sc, rnd, t0, limit=60.0)
    rnd.rss = max(rnd.rss, sc.hwm_mib())
    rnd.kafka_lag = kafka_lag(sc) if ARGS.kafka == "embedded" else None
    for egt, sent, status, code in rnd.requests:
        if status is None:
            cut = rnd.signal_at is not None and sent + ARGS.request_timeout > rnd.signal_at
            rnd.c[("cut_by_kill" if rnd.signal_kind == "kill9" else "cut_by_term")
                  if cut else "unanswered"] += 1
    verify(sc, rnd, rnd.egts)
    return scan_log(sc, rnd, cursor)


COLS = ["rounds", "acked_egts", "acked_entities", "lost", "partial", "phantom",
        "unanswered", "cut_by_kill", "cut_by_term", "lsn_gaps", "log_bad", "stuck",
        "unchecked"]


def summarize(rounds):
    rows = []
    for kind in sorted({r.fault for r in rounds}) + ["total"]:
        rs = [r for r in rounds if kind in ("total", r.fault)]
        c = sum((r.c for r in rs), collections.Counter())
        errs = sum((r.errors for r in rs), collections.Counter())
        rec = [r.recover_ms for r in rs if r.recover_ms is not None]
        term = [r.term_ms for r in rs if r.term_ms is not None]
        lags = [r.kafka_lag for r in rs if r.kafka_lag is not None]
        ms = lambda v: "%.0f/%.0f" % (statistics.median(v), max(v)) if v else "-"
        row = {"fault": kind, "rounds": len(rs), **{k: c[k] for k in COLS[1:]},
               "peak_rss_mib": round(max(r.rss for r in rs), 1),
               "recover_ms": ms(rec), "term_ms": ms(term),
               "kafka_lag": max(lags) if lags else "-",
               "errors": " ".join("%s:%d" % kv for kv in sorted(errs.items())) or "-"}
        rows.append(row)
    return rows


def print_table(rows):
    heads = ["fault", "rnds", "egts", "ents", "lost", "part", "phan", "unans", "cut9",
             "cutT", "gaps", "logbad", "stuck", "unchk", "rssMiB", "recov ms", "term ms", "klag"]
    keys = ["fault"] + COLS + ["peak_rss_mib", "recover_ms", "term_ms", "kafka_lag"]
    widths = [max(len(h), *(len(str(r[k])) for r in rows)) for h, k in zip(heads, keys)]
    log("  ".join(h.rjust(w) for h, w in zip(heads, widths)))
    for r in rows:
        log("  ".join(str(r[k]).rjust(w) for k, w in zip(keys, widths)))
    log("error replies by code:")
    for r in rows:
        log("  %-12s %s" % (r["fault"], r["errors"]))
    if ARGS.json:
        for r in rows:
            log(json.dumps(r))


def main():
    global ARGS
    default_bin = os.path.join(REPO, "build", "sidecar", "sidetable")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=default_bin, help="sidetable binary (copied first)")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--seed", type=int, default=None, help="fault choice and timing")
    p.add_argument("--duration-per-round", type=float, default=3.0, help="seconds of load")
    p.add_argument("--faults", default=",".join(ALL_FAULTS), help="comma list")
    p.add_argument("--durability", choices=["os", "fsync"], default="os")
    p.add_argument("--kafka", choices=["none", "embedded"], default="embedded")
    p.add_argument("--workdir", help="default: a new temporary directory")
    p.add_argument("--keep", action="store_true", help="keep the workdir")
    p.add_argument("--json", action="store_true", help="also print rows as JSON lines")
    p.add_argument("--request-timeout", type=float, default=10.0,
                   help="no reply within this many seconds = unanswered")
    p.add_argument("--tmpfs-mb", type=int, default=768,
                   help="tmpfs size for disk-full (holds the whole campaign's data)")
    ARGS = a = p.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    faults = [f.strip() for f in a.faults.split(",") if f.strip()]
    for f in faults:
        if f not in ALL_FAULTS:
            p.error("unknown fault %r (kafka-outage: see --help)" % f)
    if "disk-full" in faults and os.geteuid() != 0:
        log("skipping disk-full: mounting a tmpfs needs root")
        faults.remove("disk-full")
    if not faults:
        p.error("no fault left to inject")
    workdir = a.workdir or tempfile.mkdtemp(prefix="sidetable-chaos-")
    os.makedirs(workdir, exist_ok=True)
    binary = os.path.join(workdir, "sidetable")
    for _ in range(120):               # the lead may be relinking it right now
        if os.path.exists(a.bin):
            shutil.copy2(a.bin, binary)   # a rebuild mid-campaign cannot swap it
            break
        time.sleep(1)
    else:
        sys.exit("no binary at %s" % a.bin)
    mnt = None
    data = os.path.join(workdir, "data")
    if "disk-full" in faults:
        mnt = os.path.join(workdir, "tmpfs")
        os.makedirs(mnt, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % a.tmpfs_mb, "tmpfs", mnt],
                       check=True)
        data = os.path.join(mnt, "data")
    sc = Sidecar(binary, data, workdir, ["--durability", a.durability, "--kafka", a.kafka])
    def on_term(*_):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_term)
    log("chaos: seed %d, faults %s, workdir %s" % (seed, ",".join(faults), workdir))
    rounds, final, aborted = [], None, False
    try:
        sc.start()
        c = sidetable.Client(sc.endpoint, timeout=10, retries=3, caller="chaos")
        try:
            c.create_table(TABLE)
        except sidetable.SidetableError as e:
            if e.code != "TableAlreadyExists":
                raise
        cursor = max(1, c.read_changes(0, max=1).first or 1)
        c.close()
        for i in range(a.rounds):
            rnd = Round(i, rng.choice(faults))
            rounds.append(rnd)
            cursor = run_round(sc, rnd, rng, cursor)
            log("round %2d %-11s egts %5d lost %d partial %d unanswered %d cut %d "
                "rss %.0f MiB recover %s ms%s" % (
                    i, rnd.fault, rnd.c["acked_egts"], rnd.c["lost"], rnd.c["partial"],
                    rnd.c["unanswered"], rnd.c["cut_by_kill"] + rnd.c["cut_by_term"],
                    rnd.rss, "%.0f" % rnd.recover_ms if rnd.recover_ms else "-",
                    "".join("; " + n for n in rnd.notes[:4])))
        # Durability across the whole campaign: everything acknowledged so far.
        final = Round(a.rounds, "final")
        verify(sc, final, [e for e, v in EGTS.items() if v["status"] == 200])
        log("final re-check of %d acknowledged EGTs: lost %d, partial %d" % (
            final.c["acked_egts"], final.c["lost"], final.c["partial"]))
    except KeyboardInterrupt:
        log("interrupted")
    except RuntimeError as e:          # e.g. the sidecar no longer starts
        log("campaign stopped: %s" % e)
        aborted = True
    finally:
        sc.stop(signal.SIGTERM, wait=15)
        if mnt:
            if subprocess.run(["umount", mnt]).returncode != 0:
                subprocess.run(["umount", "-l", mnt])
        if not a.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if not rounds:
        return 1
    print_table(summarize(rounds))
    bad = sum(r.c["lost"] + r.c["partial"] + r.c["lsn_gaps"] + r.c["log_bad"] + r.c["unchecked"]
              for r in rounds)
    bad += (final.c["lost"] + final.c["partial"] + final.c["unchecked"]) if final else 0
    bad += aborted
    log("seed %d: %s" % (seed, "FAILED (lost/partial/gap/unchecked)" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
