#!/usr/bin/env bash
# redis-benchmark against shardkv's Redis listener and against Redis, in one run on this machine:
#   - one shardkv node (RF=1, --redis-listen) against one redis-server 7.0.15;
#   - a 3-node shardkv cluster (`cluster up`, RF=3, W=Q=2), driven both with `--cluster` (the
#     emulated CLUSTER SLOTS spreads the clients over the three nodes) and plain against node 1
#     (which coordinates every key), against a 3-master Redis Cluster (redis-server
#     --cluster-enabled yes, formed with `redis-cli --cluster create`, no replicas);
#   - `redis-benchmark -t set`, `-t get`, `-t mset`, `-t incr` (one run each; --tests picks)
#     with --clients connections,
#     100-byte values, random keys over --keyspace, pipeline 1 and 16, every target interleaved
#     within each of --repeat rounds;
#   - measures each server's CPU per op (user + system ticks from /proc/PID/stat around each
#     run; the cluster's summed over its nodes), the figure the shared machine disturbs least;
#   - prints a markdown table of medians (ops/s per test, shardkv/Redis ratios of the same run)
#     and the count of error replies (any `rror` in redis-benchmark's output); raw output stays
#     in --out.
# Every process started here is stopped on exit (lib.sh), whatever happened.
#
# Usage: bench/scripts/redis_benchmark.sh [--build DIR | --bin DIR] [--requests N] [--clients N]
#                                         [--keyspace N] [--repeat N] [--tests LIST] [--out DIR]
#   --build DIR  a build tree (tools/shardkv/shardkv, tools/shardkv-node/shardkv-node), default
#                build-release
#   --bin DIR    a directory holding the two binaries `shardkv` and `shardkv-node` instead
#   --requests N requests per test and run (default 100000; MSET counts one per 10 keys)
#   --tests LIST redis-benchmark tests, space separated, of set get mset incr hset sadd (default
#                the first four; hset and sadd write one hash or set, so keep --keyspace small)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD="$ROOT/build-release"
BIN=""
REQUESTS=100000
CLIENTS=50
KEYSPACE=100000
REPEAT=3
TESTS="set get mset incr"
OUT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --requests) REQUESTS=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --keyspace) KEYSPACE=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --tests) TESTS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) bench_usage; exit 0 ;;
    *) echo "redis_benchmark.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
for t in $TESTS; do
  [[ $t =~ ^(set|get|mset|incr|hset|sadd)$ ]] || { echo "redis_benchmark.sh: unknown test: $t" >&2; exit 2; }
done
for n in "$REQUESTS" "$CLIENTS" "$KEYSPACE" "$REPEAT"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "redis_benchmark.sh: not a positive count: $n" >&2; exit 2; }
done

bench_paths "$BUILD"
if [[ -n $BIN ]]; then SHARDKV_CLI="$BIN/shardkv" NODE_BIN="$BIN/shardkv-node"; fi
bench_need_bins "run: cmake --build $BUILD -j2 --target shardkv_node_bin shardkv_cli" \
  "$NODE_BIN" "$SHARDKV_CLI"
bench_need_tools redis-server redis-cli redis-benchmark python3
export SHARDKV_NODE_BIN="$NODE_BIN"
bench_workdir redis_benchmark
[[ -n "$OUT" ]] || OUT=$(mktemp -d /tmp/redis_benchmark-out.XXXXXX)
mkdir -p "$OUT"

# --- one shardkv node with a Redis listener, and one redis-server.
start_node "$WORK/single" "$OUT/single.log" "$NODE_BIN" --threads 2 --redis-listen 127.0.0.1:0
for _ in $(seq 100); do
  [[ -s $WORK/single/redis_port ]] && break
  sleep 0.1
done
[[ -s $WORK/single/redis_port ]] || bench_die "the node wrote no redis_port" "$OUT/single.log"
SINGLE_PORT=$(cat "$WORK/single/redis_port")
SINGLE_PIDS="$NODE_PID"
start_redis "$WORK/redis" "$OUT/redis.log"
REDIS_SINGLE_PORT=$REDIS_PORT
REDIS_SINGLE_PIDS="$REDIS_PID"

# --- a 3-node shardkv cluster: `cluster up` starts every node with a Redis listener.
cluster_up "$WORK/cluster" ring 3 3
mapfile -t SK_PORTS < <("$SHARDKV_CLI" --dir "$WORK/cluster" cluster status --json |
  python3 -c 'import json, sys
for n in json.load(sys.stdin)["nodes"]: print(n["redis_address"].rsplit(":", 1)[1])')
((${#SK_PORTS[@]} == 3)) || bench_die "the cluster reports ${#SK_PORTS[@]} Redis listeners"
SK_PIDS=$("$SHARDKV_CLI" --dir "$WORK/cluster" cluster status --json |
  python3 -c 'import json, sys; print(" ".join(str(n["pid"]) for n in json.load(sys.stdin)["nodes"]))')

# --- a 3-master Redis Cluster, no replicas, no persistence.
RC_PORTS=()
for i in 1 2 3; do
  # The cluster bus listens on port+10000: both must be free.
  start_redis "$WORK/rc$i" "$OUT/rc$i.log" --cluster-enabled yes \
    --cluster-config-file "$WORK/rc$i/nodes.conf" --cluster-node-timeout 5000
  RC_PORTS+=("$REDIS_PORT")
  RC_PIDS="${RC_PIDS:-} $REDIS_PID"
done
redis-cli --cluster create "127.0.0.1:${RC_PORTS[0]}" "127.0.0.1:${RC_PORTS[1]}" \
  "127.0.0.1:${RC_PORTS[2]}" --cluster-replicas 0 --cluster-yes >"$OUT/rc-create.log" 2>&1 ||
  bench_die "redis-cli --cluster create failed" "$OUT/rc-create.log"
for _ in $(seq 200); do
  ok=1
  for p in "${RC_PORTS[@]}"; do
    redis-cli -p "$p" cluster info | grep -q 'cluster_state:ok' || ok=0
  done
  ((ok)) && break
  sleep 0.1
done
((ok)) || bench_die "the Redis Cluster did not reach cluster_state:ok in 20 s"

echo "# shardkv node :$SINGLE_PORT, redis-server :$REDIS_SINGLE_PORT;" \
  "shardkv cluster :${SK_PORTS[*]}, Redis Cluster :${RC_PORTS[*]}" >&2
echo "# $REQUESTS requests per test, $CLIENTS clients, keyspace $KEYSPACE, x $REPEAT;" \
  "raw results in $OUT" >&2

# The CPU time (clock ticks, user + system) the server processes `pids` have used so far.
cpu_ticks() {
  local pid total=0
  for pid in "$@"; do
    # Fields 14 and 15 of /proc/PID/stat, counted after the ")" that ends the command name.
    total=$((total + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}')))
  done
  echo "$total"
}

bench() {  # name pipeline rep "server pids" redis-benchmark-args...
  local name=$1 pipeline=$2 rep=$3 pids=$4 test before
  shift 4
  for test in $TESTS; do
    local base="$OUT/$name-P$pipeline-rep$rep-$test"
    echo "# $name P=$pipeline rep=$rep: redis-benchmark $* -c $CLIENTS -n $REQUESTS" \
      "-P $pipeline -r $KEYSPACE -d 100 -t $test --csv" >&2
    # shellcheck disable=SC2086  # pids is a list
    before=$(cpu_ticks $pids)
    timeout 600 redis-benchmark -h 127.0.0.1 "$@" -c "$CLIENTS" -n "$REQUESTS" -P "$pipeline" \
      -r "$KEYSPACE" -d 100 -t "$test" --csv >"$base.csv" 2>"$base.err" ||
      echo "exit $?" >>"$base.err"
    # shellcheck disable=SC2086
    echo $(($(cpu_ticks $pids) - before)) >"$base.cpu"
  done
}

for rep in $(seq "$REPEAT"); do
  for pipeline in 1 16; do
    bench shardkv-node "$pipeline" "$rep" "$SINGLE_PIDS" -p "$SINGLE_PORT"
    bench redis-server "$pipeline" "$rep" "$REDIS_SINGLE_PIDS" -p "$REDIS_SINGLE_PORT"
    bench shardkv-cluster "$pipeline" "$rep" "$SK_PIDS" --cluster -p "${SK_PORTS[0]}"
    bench redis-cluster "$pipeline" "$rep" "$RC_PIDS" --cluster -p "${RC_PORTS[0]}"
    bench shardkv-cluster-plain "$pipeline" "$rep" "$SK_PIDS" -p "${SK_PORTS[0]}"
  done
done

python3 - "$OUT" "$REPEAT" "$REQUESTS" "$(getconf CLK_TCK)" "$TESTS" <<'PY'
import csv, glob, os, statistics, sys
out, repeat, requests, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rps, errors, cpu = {}, {}, {}
names = {"set": "SET", "get": "GET", "mset": "MSET (10 keys)", "incr": "INCR", "hset": "HSET", "sadd": "SADD"}
for path in sorted(glob.glob(f"{out}/*-P*-rep*-*.csv")):
    name = os.path.basename(path)[:-4]
    target, rest = name.rsplit("-P", 1)
    pipeline = int(rest.split("-rep")[0])
    test = names[rest.rsplit("-", 1)[1]]
    ticks = int(open(path[:-4] + ".cpu").read().strip() or 0)
    cpu.setdefault((target, pipeline, test), []).append(ticks / hz / requests * 1e6)
    text = open(path).read() + open(path[:-4] + ".err").read()
    errors[target] = errors.get(target, 0) + text.count("rror") + text.count("exit ")
    # In --cluster mode the CSV follows a list of the masters.
    lines = open(path).read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"test"')), len(lines))
    for rec in csv.DictReader(lines[start:]):
        rps.setdefault((target, pipeline, rec["test"]), []).append(float(rec["rps"]))
med = lambda xs: statistics.median(xs) if xs else float("nan")
tests = tuple(names[t] for t in sys.argv[5].split())
print(f"Medians of {repeat} runs (ops/s; an MSET of 10 keys counts one).")
print()
print("| redis-benchmark test | P | shardkv node | redis-server | node/redis | shardkv cluster "
      "--cluster | shardkv cluster, plain on node 1 | Redis Cluster --cluster | "
      "cluster/Redis Cluster | plain/Redis Cluster |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for pipeline in (1, 16):
    for t in tests:
        m = lambda target: med(rps.get((target, pipeline, t), []))
        n, r = m("shardkv-node"), m("redis-server")
        c, cp, rc = m("shardkv-cluster"), m("shardkv-cluster-plain"), m("redis-cluster")
        print(f"| {t} | {pipeline} | {n:,.0f} | {r:,.0f} | **{n / r:.2f}x** | {c:,.0f} | "
              f"{cp:,.0f} | {rc:,.0f} | **{c / rc:.2f}x** | {cp / rc:.2f}x |")
print()
print("Server CPU per op (us, user + system of the server processes from /proc/PID/stat; the")
print("cluster columns sum the 3 nodes; medians):")
print()
print("| test | P | shardkv node | redis-server | node/redis | shardkv cluster --cluster | "
      "Redis Cluster --cluster | cluster/Redis Cluster |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for pipeline in (1, 16):
    for t in tests:
        m = lambda target: med(cpu.get((target, pipeline, t), []))
        n, r, c, rc = m("shardkv-node"), m("redis-server"), m("shardkv-cluster"), m("redis-cluster")
        ratio = lambda a, b: f"{a / b:.2f}x" if b > 0 else "n/a"
        print(f"| {t} | {pipeline} | {n:.1f} | {r:.1f} | **{ratio(n, r)}** | {c:.1f} | {rc:.1f} | "
              f"**{ratio(c, rc)}** |")
print()
print("runs per target and pipeline:", {k: len(v) for k, v in sorted(rps.items()) if k[2] == "SET"})
print("error replies or failed runs:", errors)
sys.exit(1 if any(errors.values()) else 0)
PY
