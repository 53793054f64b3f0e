#!/usr/bin/python3
"""redis-py (Debian's python3-redis) against a 3-node `shardkv cluster up` cluster (issue 13 §5).

The plain client `redis.Redis` on each node and the cluster client `redis.cluster.RedisCluster`
over the emulated CLUSTER SLOTS/NODES: commands, pipelines, binary data, error replies mapped to
exceptions; SCAN, KEYS and DBSIZE from the plain client and from RedisCluster with and without
the node-scoped opt-in (its connections named "shardkv-cluster...", design.md "Scans"); then
writers on every node and through the cluster client while a scale-out runs
(`cluster add-node`, `rebalance watch` until done): 0 errors, and every acknowledged write is
read back at the end, from every node including the new one.

Run by CTest (label multiprocess) as
  /usr/bin/python3 redis_py_test.py --shardkv PATH --shardkv-node PATH
Exit 0 passed, 1 failed, 77 skipped (the redis module is missing), 2 bad usage.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77

try:
    import redis
    import redis.cluster
except ImportError as e:
    print(f"SKIPPED: the Python module 'redis' is missing ({e}): install Debian's python3-redis "
          "(tools/install-deps.sh); run this with /usr/bin/python3, not a pyenv shim",
          flush=True)
    sys.exit(SKIP)

SEED = 1313
CLI_TIMEOUT = 120  # seconds for one `shardkv` command
SCALE_OUT_LIMIT = 180  # seconds for the whole change, add-node to the end of `rebalance watch`
PRELOAD_KEYS = 4000  # 1 KiB each, so that the throttled change streams for a few seconds
MAX_WRITES_PER_WRITER = 200000  # a bound on each writer's loop, besides the time bound

failures = []


def check(cond, what):
    if cond:
        print(f"  ok    {what}", flush=True)
    else:
        print(f"  FAIL  {what}", flush=True)
        failures.append(what)
    return cond


def check_raises(exc_type, fragment, fn, what):
    try:
        fn()
    except exc_type as e:
        return check(fragment in str(e), f"{what}: {type(e).__name__} {e!s:.120}")
    except Exception as e:  # the wrong exception is a failure, not a crash of the test
        return check(False, f"{what}: expected {exc_type.__name__}, got {type(e).__name__} {e}")
    return check(False, f"{what}: expected {exc_type.__name__}, nothing raised")


class Cluster:
    """A local cluster in its own temp dir; close() stops every process it started."""

    def __init__(self, cli, node_bin):
        self.cli = cli
        self.env = dict(os.environ, SHARDKV_NODE_BIN=node_bin)
        base = os.environ.get("TMPDIR") or "/tmp"
        self.dir = tempfile.mkdtemp(prefix="shardkv-redis-py-", dir=base)

    def run(self, *args, check_rc=True, timeout=CLI_TIMEOUT):
        argv = [self.cli, *args, "--dir", self.dir]
        r = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        if check_rc and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r

    def status(self):
        return json.loads(self.run("cluster", "status", "--json").stdout)

    def redis_ports(self):
        return [int(n["redis_address"].rsplit(":", 1)[1]) for n in self.status()["nodes"]
                if n.get("redis_address")]

    def pids(self):
        out = []
        for name in os.listdir(self.dir):
            try:
                with open(os.path.join(self.dir, name, "pid")) as f:
                    out.append(int(f.read().strip()))
            except (OSError, ValueError):
                pass
        return out

    def close(self):
        try:
            self.run("cluster", "down", "--wait", "10", check_rc=False, timeout=60)
        except Exception as e:  # cleanup goes on: nothing may outlive the test
            print(f"cluster down: {e}", flush=True)
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


def plain(port, **kw):
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=30, **kw)


def test_plain_client(ports):
    print("plain client (RESP2) on each node", flush=True)
    r1, r2, r3 = (plain(p) for p in ports)
    check(r1.ping() is True, "PING")
    check(r1.echo("hi") == b"hi", "ECHO")
    hello = r2.execute_command("HELLO", "2")
    hello = dict(zip(hello[::2], hello[1::2]))
    check(hello.get(b"proto") == 2 and hello.get(b"server") == b"redis", f"HELLO 2: {hello}")
    check(r1.set("py:user:1", "alice") is True, "SET")
    check(r2.get("py:user:1") == b"alice", "GET on another node sees the write")
    check(r3.get("py:missing") is None, "GET of a missing key is None")
    check(r1.set("py:user:1", "bob", get=True) == b"alice", "SET ... GET returns the old value")
    check(r1.set("py:absent", "x", get=True) is None, "SET ... GET on a missing key is None")
    check(r3.mset({"py:a": "1", "py:b": "2", "py:c": "3"}) is True, "MSET")
    check(r1.mget(["py:a", "py:b", "py:nope", "py:c"]) == [b"1", b"2", None, b"3"],
          "MGET with a missing key")
    check(r2.exists("py:a", "py:b", "py:nope") == 2, "EXISTS counts")
    check(r2.exists("py:a", "py:a") == 2, "EXISTS counts a key given twice twice")
    check(r3.delete("py:a", "py:nope") == 1, "DEL counts the deleted")
    check(r1.get("py:a") is None, "GET after DEL")
    check(r1.unlink("py:b") == 1, "UNLINK")
    check(r1.strlen("py:user:1") == 3, "STRLEN")
    check(r1.getrange("py:user:1", 0, 1) == b"bo", "GETRANGE")
    check(r1.type("py:user:1") == b"string" and r1.type("py:nope") == b"none", "TYPE")

    # Binary keys and values: every byte value, NULs and CR LF inside.
    key = bytes(range(256))
    value = bytes(reversed(range(256))) * 40 + b"\r\n\x00end"
    check(r1.set(key, value) is True, "SET of a binary key and value")
    check(r2.get(key) == value, "GET of a binary key returns the value byte for byte")
    check(r3.strlen(key) == len(value), "STRLEN of a binary value")
    big = random.Random(SEED).randbytes(1 << 20)
    check(r1.set(b"py:big\x00", big) is True and r3.get(b"py:big\x00") == big,
          "a 1 MiB random value")
    check(r1.set(b"py:empty", b"") is True and r2.get(b"py:empty") == b"", "an empty value")

    # Error replies are ResponseError with the server's text; the connection stays usable.
    # Counters: increments through every node add up (design.md "Counters").
    check(r1.incr("py:n") == 1 and r2.incr("py:n", 5) == 6 and r3.decr("py:n") == 5,
          "INCR, INCRBY and DECR through three nodes add up")
    check(r2.get("py:n") == b"5", "GET of a counter is its decimal value")
    # A user record as a hash and its tags as a set, written through different nodes (design.md
    # "Hashes", "Sets").
    check(r1.hset("py:h:1", mapping={"name": "ann", "age": "41"}) == 2 and
          r2.hset("py:h:1", "city", "oslo") == 1, "HSET of a user record through two nodes")
    check(r3.hgetall("py:h:1") == {b"name": b"ann", b"age": b"41", b"city": b"oslo"}, "HGETALL")
    check(r1.hget("py:h:1", "age") == b"41" and r2.hdel("py:h:1", "age") == 1 and
          r3.hlen("py:h:1") == 2, "HGET, HDEL, HLEN")
    check(r1.sadd("py:tags:1", "red", "blue") == 2 and r2.sadd("py:tags:1", "blue", "green") == 1,
          "SADD of tags through two nodes")
    check(r3.smembers("py:tags:1") == {b"red", b"blue", b"green"}, "SMEMBERS is a Python set")
    check(r1.sismember("py:tags:1", "red") and r2.srem("py:tags:1", "red") == 1 and
          r3.scard("py:tags:1") == 2, "SISMEMBER, SREM, SCARD")
    check(r1.type("py:h:1") == b"hash" and r1.type("py:tags:1") == b"set", "TYPE hash and set")
    check_raises(redis.ResponseError, "WRONGTYPE", lambda: r1.get("py:tags:1"),
                 "GET of a set is WRONGTYPE")
    check_raises(redis.ResponseError, "not an integer", lambda: r1.incr("py:user:1"),
                 "INCR of a string that is no integer is refused as by Redis")
    check_raises(redis.ResponseError, "read-modify-write is not atomic",
                 lambda: r1.incrbyfloat("py:f", 1.5), "INCRBYFLOAT is refused with the reason")
    check_raises(redis.ResponseError, "read-modify-write", lambda: r1.append("py:user:1", "x"),
                 "APPEND is refused with the reason")
    check_raises(redis.ResponseError, "unknown command", lambda: r1.execute_command("NOPE"),
                 "an unknown command")
    check_raises(redis.ResponseError, "wrong number of arguments",
                 lambda: r1.execute_command("GET"), "GET with no key: arity error")
    check_raises(redis.ResponseError, "syntax error",
                 lambda: r1.execute_command("SET", "k", "v", "BOGUS"), "SET with a bad option")
    check_raises(redis.ResponseError, "DB index is out of range",
                 lambda: r1.execute_command("SELECT", "1"), "SELECT 1")
    check(r1.get("py:user:1") == b"bob", "the connection serves after the errors")

    # Pipelines without a transaction: replies in order, errors in place.
    p = r2.pipeline(transaction=False)
    for i in range(100):
        p.set(f"py:p:{i}", i)
    p.mget([f"py:p:{i}" for i in range(100)])
    p.append("py:p:0", "x")
    p.get("py:p:99")
    out = p.execute(raise_on_error=False)
    check(out[:100] == [True] * 100, "a pipeline of 100 SETs")
    check(out[100] == [str(i).encode() for i in range(100)], "MGET inside the pipeline")
    check(isinstance(out[101], redis.ResponseError), "an error reply in place in the pipeline")
    check(out[102] == b"99", "the command after the error in the pipeline")
    # MULTI/EXEC: refused, since shardkv has no multi-key transactions, and none of it applied:
    # a client that sees its transaction fail finds nothing of it (the default pipeline() is a
    # transaction: MULTI, the commands, EXEC in one write).
    r1.set("py:tx:kept", "before")

    def transaction():
        p = r3.pipeline()
        p.set("py:tx:a", 1).set("py:tx:b", 2).mset({"py:tx:c": 3}).delete("py:tx:kept")
        p.set("py:tx:d", 4, ex=100).execute()

    check_raises(redis.ResponseError, "MULTI is refused", transaction,
                 "a MULTI/EXEC pipeline raises MULTI's refusal")
    tx_keys = ["py:tx:a", "py:tx:b", "py:tx:c", "py:tx:d"]
    check(r1.exists(*tx_keys) == 0 and r3.exists(*tx_keys) == 0,
          "none of the refused transaction's keys exists afterwards")
    check(r2.get("py:tx:kept") == b"before", "its DEL did not run either")
    check(r3.ping() is True, "the connection serves after the refused transaction")
    check(r3.set("py:tx:a", 1) is True and r1.get("py:tx:a") == b"1",
          "a plain SET on that connection runs again")

    # The emulated cluster commands, as cluster clients read them.
    check(r1.execute_command("CLUSTER", "KEYSLOT", "foo") == 12182, "CLUSTER KEYSLOT foo")
    slots = r1.execute_command("CLUSTER", "SLOTS")
    covered = sum(s[1] - s[0] + 1 for s in slots)
    check(covered == 16384 and len(slots) == 3, f"CLUSTER SLOTS: {len(slots)} ranges, "
          f"{covered} slots")

    # RESP3: redis-py 4.3.4 (Debian 12) has no protocol=3; newer ones do.
    try:
        r = plain(ports[0], protocol=3)
    except TypeError:
        print(f"  SKIP  protocol=3: redis-py {redis.__version__} does not support RESP3",
              flush=True)
    else:
        check(r.set("py:r3", "v") and r.get("py:r3") == b"v", "RESP3 SET and GET")
        check(r.mget(["py:r3", "py:nope"]) == [b"v", None], "RESP3 MGET")


def test_cluster_client(ports):
    print("cluster client (RedisCluster) over the emulated slot table", flush=True)
    c = redis.cluster.RedisCluster(host="127.0.0.1", port=ports[1], socket_timeout=30)
    nodes = sorted(n.port for n in c.get_nodes())
    check(nodes == sorted(ports), f"RedisCluster sees every node: {nodes}")
    check(c.set("pyc:foo", "bar") is True and c.get("pyc:foo") == b"bar", "SET and GET")
    kv = {f"pyc:{i}": f"v{i}" for i in range(50)}
    replies = c.mset_nonatomic(kv)
    check(len(replies) > 1 and all(x is True for x in replies), f"MSET of keys in {len(replies)} "
          "slots")
    check(c.mget_nonatomic(list(kv)) == [v.encode() for v in kv.values()], "MGET across slots")
    check(c.exists(*list(kv)[:10]) == 10, "EXISTS across slots")
    check(c.delete(*list(kv)[:10]) == 10, "DEL across slots")
    check(c.get("pyc:0") is None, "GET after DEL")
    p = c.pipeline()
    for i in range(20):
        p.set(f"pyc:p:{i}", i)
    for i in range(20):
        p.get(f"pyc:p:{i}")
    check(p.execute() == [True] * 20 + [str(i).encode() for i in range(20)],
          "a cluster pipeline over several nodes")
    check(c.hset("pyc:h:1", mapping={"name": "bob", "age": "7"}) == 2 and
          c.hgetall("pyc:h:1") == {b"name": b"bob", b"age": b"7"}, "HSET and HGETALL")
    check(c.sadd("pyc:tags:1", "a", "b", "a") == 2 and c.smembers("pyc:tags:1") == {b"a", b"b"},
          "SADD and SMEMBERS")
    check(c.set(b"pyc:\x00\xff", b"\x00\r\n") is True and c.get(b"pyc:\x00\xff") == b"\x00\r\n",
          "binary key and value")
    check_raises(redis.ResponseError, "DB index is out of range",
                 lambda: c.execute_command("SELECT", "1", target_nodes=c.get_primaries()[0]),
                 "an error reply through the cluster client")
    c.close()


SCAN_KEYS = 600


def test_scan(ports):
    print("SCAN, KEYS and DBSIZE: plain, and RedisCluster with and without the opt-in", flush=True)
    r = plain(ports[0])
    want = {f"pys:{i}".encode() for i in range(SCAN_KEYS)}
    r.mset({k: b"v" for k in want})

    def counted(keys):
        seen = {}
        for k in keys:
            seen[k] = seen.get(k, 0) + 1
        return (len(want - set(seen)), sum(1 for n in seen.values() if n > 1),
                sum(seen.values()))

    for port in ports:
        missing, repeated, total = counted(plain(port).scan_iter(match="pys:*", count=50))
        check(missing == 0 and repeated == 0 and total == SCAN_KEYS,
              f"plain scan_iter on :{port}: {total} keys, {missing} missing, {repeated} twice")
    # The opt-in: every node connection of the cluster client is named shardkv-cluster...
    c = redis.cluster.RedisCluster(host="127.0.0.1", port=ports[1], socket_timeout=30,
                                   client_name="shardkv-cluster:redis-py")
    missing, repeated, total = counted(c.scan_iter(match="pys:*", count=50))
    check(missing == 0 and repeated == 0 and total == SCAN_KEYS,
          f"RedisCluster(client_name=shardkv-cluster...).scan_iter(): {total} keys, {missing} "
          f"missing, {repeated} twice")
    primaries = redis.cluster.RedisCluster.PRIMARIES
    missing, repeated, total = counted(c.keys("pys:*", target_nodes=primaries))
    check(missing == 0 and repeated == 0 and total == SCAN_KEYS,
          f"KEYS on every primary, node-scoped: {total} keys, {missing} missing")
    # DBSIZE summed over the primaries is the cluster's count (the members' stats converge and
    # are cached for a second: polled, bounded).
    deadline = time.monotonic() + 20
    while True:
        whole, summed = r.dbsize(), c.dbsize(target_nodes=primaries)
        if whole == summed or time.monotonic() > deadline:
            break
        time.sleep(0.05)  # polling the nodes' cached stats
    check(whole == summed and whole >= SCAN_KEYS,
          f"DBSIZE summed over the node-scoped primaries {summed} = plain DBSIZE {whole}")
    c.close()
    # Without the opt-in every primary scans the whole cluster: each key once per node, as
    # docs/redis.md says.
    c = redis.cluster.RedisCluster(host="127.0.0.1", port=ports[2], socket_timeout=30)
    missing, repeated, total = counted(c.scan_iter(match="pys:*", count=50))
    check(missing == 0 and total == SCAN_KEYS * len(ports),
          f"RedisCluster without the opt-in: {total} keys, each once per node")
    c.close()


class Writer(threading.Thread):
    """Writes unique keys through one client until told to stop; records what was acknowledged."""

    def __init__(self, name, make_client, cluster_client, seed):
        super().__init__(name=name, daemon=True)
        self.make_client = make_client
        self.cluster_client = cluster_client
        self.rng = random.Random(seed)
        self.acked = {}
        self.errors = []
        self.reads = 0
        self.stop = threading.Event()
        self.during_change = 0
        self.ops = 0  # operations done, read by wait_for_progress (an int: atomic in CPython)
        self.in_change = threading.Event()

    def value(self, i):
        return f"{self.name}:{i}:".encode() + self.rng.randbytes(self.rng.randrange(1, 200))

    def run(self):
        client = self.make_client()
        deadline = time.monotonic() + SCALE_OUT_LIMIT + 60
        i = 0  # the key counter
        step = 0  # which kind of operation comes next
        while not self.stop.is_set() and i < MAX_WRITES_PER_WRITER and time.monotonic() < deadline:
            try:
                kind = step % 4
                step += 1
                if kind == 0:  # a single SET, read back at once
                    k, v = f"{self.name}:k{i}", self.value(i)
                    if client.set(k, v) is not True:
                        raise AssertionError(f"SET {k} not acknowledged")
                    self.acked[k] = v
                    got = client.get(k)
                    self.reads += 1
                    if got != v:
                        raise AssertionError(f"GET {k} right after SET: {got!r:.60}")
                    i += 1
                elif kind == 1:  # MSET of 8 keys
                    kv = {f"{self.name}:k{i + j}": self.value(i + j) for j in range(8)}
                    if self.cluster_client:
                        ok = all(client.mset_nonatomic(kv))
                    else:
                        ok = client.mset(kv) is True
                    if not ok:
                        raise AssertionError("MSET not acknowledged")
                    self.acked.update(kv)
                    i += 8
                elif kind == 2:  # a pipeline of 16 SETs
                    p = client.pipeline(transaction=False) if not self.cluster_client else \
                        client.pipeline()
                    kv = {f"{self.name}:k{i + j}": self.value(i + j) for j in range(16)}
                    for k, v in kv.items():
                        p.set(k, v)
                    if p.execute() != [True] * 16:
                        raise AssertionError("pipelined SETs not all acknowledged")
                    self.acked.update(kv)
                    i += 16
                else:  # an MGET of recent writes
                    keys = list(self.acked)[-10:]
                    got = (client.mget_nonatomic(keys) if self.cluster_client
                           else client.mget(keys))
                    self.reads += 1
                    want = [self.acked[k] for k in keys]
                    if got != want:
                        raise AssertionError("MGET of acknowledged writes differs")
                self.ops += 1
                if self.in_change.is_set():
                    self.during_change += 1
            except Exception as e:  # every error is counted; the test requires none
                self.errors.append(f"{type(e).__name__}: {e}")
                if len(self.errors) >= 20:
                    break
                i += 16  # a failed write's keys are not reused


def read_back(ports, acked, cluster_port):
    """Every acknowledged write, read from every node and through a new cluster client."""
    keys = list(acked)
    for port in ports:
        r = plain(port)
        bad = 0
        for s in range(0, len(keys), 500):
            chunk = keys[s:s + 500]
            got = r.mget(chunk)
            bad += sum(1 for k, g in zip(chunk, got) if g != acked[k])
        check(bad == 0, f"node :{port}: {len(keys) - bad}/{len(keys)} acknowledged writes read "
              "back")
    c = redis.cluster.RedisCluster(host="127.0.0.1", port=cluster_port, socket_timeout=30)
    check(len(c.get_nodes()) == len(ports), f"a new RedisCluster sees {len(ports)} nodes")
    got = c.mget_nonatomic(keys)
    bad = sum(1 for k, g in zip(keys, got) if g != acked[k])
    check(bad == 0, f"RedisCluster: {len(keys) - bad}/{len(keys)} acknowledged writes read back")
    c.close()


def wait_for_progress(writers, ops, when):
    """Polls (bounded) until every writer has done `ops` more operations, or one has failed."""
    start = [w.ops for w in writers]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if all(w.ops - s >= ops or w.errors or not w.is_alive() for w, s in zip(writers, start)):
            break
        time.sleep(0.01)  # polling the writers' counters
    check(all(w.ops - s >= ops for w, s in zip(writers, start)),
          f"every writer did {ops} operations {when}")


def test_scale_out(cluster, ports):
    print("writers on every node and through RedisCluster while a scale-out runs", flush=True)
    # Enough data that the throttled change streams for a while, so the writers overlap it.
    r = plain(ports[0])
    rng = random.Random(SEED)
    for s in range(0, PRELOAD_KEYS, 200):
        r.mset({f"pre:{i}": rng.randbytes(1024) for i in range(s, s + 200)})
    writers = [Writer(f"plain{n + 1}", lambda p=p: plain(p), False, SEED + n)
               for n, p in enumerate(ports)]
    writers.append(Writer("cluster", lambda: redis.cluster.RedisCluster(
        host="127.0.0.1", port=ports[2], socket_timeout=30), True, SEED + 9))
    for w in writers:
        w.start()
    try:
        wait_for_progress(writers, 50, "before the change")
        for w in writers:
            w.in_change.set()
        start = time.monotonic()
        add = cluster.run("cluster", "add-node", "--yes", "--rate", "1", "--wait", "60",
                          check_rc=False)
        check(add.returncode == 0, f"cluster add-node: exit {add.returncode} {add.stderr.strip()}")
        watch = cluster.run("rebalance", "watch", check_rc=False, timeout=SCALE_OUT_LIMIT)
        elapsed = time.monotonic() - start
        last = watch.stdout.strip().splitlines()[-1:] or [""]
        check(watch.returncode == 0, f"rebalance watch: exit {watch.returncode} after "
              f"{elapsed:.1f} s: {last[0]}")
        for w in writers:
            w.in_change.clear()
        wait_for_progress(writers, 50, "after the change")
    finally:
        for w in writers:
            w.stop.set()
        for w in writers:
            w.join(timeout=60)
    acked = {}
    for w in writers:
        check(not w.is_alive(), f"writer {w.name} stopped")
        check(not w.errors, f"writer {w.name}: {len(w.acked)} writes acknowledged, {w.reads} "
              f"reads, {len(w.errors)} errors {w.errors[:3]}")
        check(w.during_change > 0, f"writer {w.name}: {w.during_change} operations during the "
              "change")
        acked.update(w.acked)
    status = cluster.status()
    check(len(status["nodes"]) == 4 and all(n["state"] == "up" for n in status["nodes"]),
          "four nodes up after the scale-out")
    rebalance = status.get("rebalance") or {}
    check(rebalance.get("state", "done") == "done", f"the change is done: {rebalance}")
    new_ports = cluster.redis_ports()
    check(len(new_ports) == 4, f"four Redis listeners: {new_ports}")
    added = [p for p in new_ports if p not in ports]
    if not check(len(added) == 1, f"the new node's Redis listener: {added}"):
        return
    pre = plain(added[0]).mget([f"pre:{i}" for i in range(PRELOAD_KEYS)])
    check(all(x is not None and len(x) == 1024 for x in pre),
          "every preloaded key read from the new node")
    read_back(new_ports, acked, added[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shardkv", required=True, help="path of the shardkv CLI")
    ap.add_argument("--shardkv-node", required=True, help="path of shardkv-node")
    args = ap.parse_args()
    for path in (args.shardkv, args.shardkv_node):
        if not os.access(path, os.X_OK):
            print(f"{path}: not an executable file", file=sys.stderr)
            return 2
    print(f"redis-py {redis.__version__}", flush=True)
    cluster = Cluster(args.shardkv, args.shardkv_node)
    try:
        cluster.run("cluster", "up", "--nodes", "3", "--base-port", "0", "--wait", "60")
        ports = cluster.redis_ports()
        if not check(len(ports) == 3, f"three Redis listeners: {ports}"):
            return 1
        test_plain_client(ports)
        test_cluster_client(ports)
        test_scan(ports)
        test_scale_out(cluster, ports)
    except Exception as e:  # an unexpected exception fails the test with its reason
        import traceback
        traceback.print_exc()
        failures.append(f"exception: {e}")
    finally:
        cluster.close()
    if failures:
        print(f"FAILED: {len(failures)} check(s):", *failures, sep="\n  ", flush=True)
        return 1
    print("PASSED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
