#!/usr/bin/env bash
# Compares a single shardkv node with redis-server on this machine, in one run:
#   - starts shardkv-node (port 0, read back from DATA/port) and redis-server (--save ''
#     --appendonly no) on free 127.0.0.1 ports, in a private temp directory;
#   - drives both with shardkv-bench (same workload, same closed loop): 50 clients, 100-byte
#     values, GET-only (after a preload) and PUT-only, pipeline 1 and 16, interleaving the two
#     targets so background load hits both alike, --repeat times; before each run it waits (at
#     most --quiet-wait seconds) until the rest of the machine uses less than --quiet % of a core,
#     because the cores are shared with whatever else runs here; --nice N (e.g. -10, needs root)
#     runs node, redis-server and the load generator at that priority, the same for both
#     targets, so that a busy machine (parallel compiles) disturbs the comparison less;
#   - runs redis-benchmark -c 50 -n 200000 -t get,set -d 100 (and -P 16) against the same redis;
#   - prints a markdown table (medians over the repeats, ratio shardkv/redis) and leaves the raw
#     JSON lines and CSV in --out (default: a new /tmp/kv_compare-out.XXXXXX, printed);
#   - stops everything it started, also on error or Ctrl-C. Every step is under `timeout`.
#
# Usage: bench/scripts/kv_compare.sh [--build DIR] [--duration SECONDS] [--repeat N]
#                                    [--clients N] [--node-threads N] [--bench-threads N]
#                                    [--quiet PCT] [--quiet-wait SECONDS] [--nice N]
#                                    [--redis-args "ARGS"] [--out DIR]
# --redis-args adds redis-server options, e.g. "--appendonly yes --appendfsync no" for a redis
# that, like shardkv's RocksDB WAL, writes every update to the OS (not fsynced) before replying.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD="$ROOT/build-kvbench"
DURATION=10
REPEAT=3
CLIENTS=50
NODE_THREADS=2
BENCH_THREADS=1
QUIET=40
QUIET_WAIT=10
NICE=0
REDIS_ARGS=""
OUT=""

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --node-threads) NODE_THREADS=$2; shift 2 ;;
    --bench-threads) BENCH_THREADS=$2; shift 2 ;;
    --quiet) QUIET=$2; shift 2 ;;
    --quiet-wait) QUIET_WAIT=$2; shift 2 ;;
    --nice) NICE=$2; shift 2 ;;
    --redis-args) REDIS_ARGS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) bench_usage; exit 0 ;;
    *) echo "kv_compare.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

bench_paths "$BUILD"
bench_need_bins "run: cmake -S . -B build-kvbench -DCMAKE_BUILD_TYPE=Release && cmake --build build-kvbench -j2 --target kv_bench shardkv_node_bin shardkv_cli" \
  "$NODE_BIN" "$BENCH_BIN" "$SHARDKV_CLI"
bench_need_tools redis-server redis-cli redis-benchmark python3
BENCH_NICE=$NICE

bench_workdir kv_compare
[[ -n "$OUT" ]] || OUT=$(mktemp -d /tmp/kv_compare-out.XXXXXX)
mkdir -p "$OUT"

# --- shardkv node: port 0, the node writes the bound port to DATA/port.
start_node "$WORK/node" "$OUT/node.log" "$NODE_BIN" --threads "$NODE_THREADS"

# --- redis-server: it cannot report a kernel-chosen port, so start_redis tries free ones.
read -r -a REDIS_EXTRA <<<"$REDIS_ARGS"  # after the defaults, so they override them
start_redis "$WORK/redis" "$OUT/redis.log" "${REDIS_EXTRA[@]}"

echo "# shardkv node $NODE_ADDR (pid $NODE_PID, $NODE_THREADS I/O threads), redis $REDIS_ADDR (pid $REDIS_PID, $(redis-server --version | awk '{print $3}'))" >&2
echo "# duration ${DURATION}s x $REPEAT repeats, $CLIENTS clients, bench threads $BENCH_THREADS, nice $NICE, redis args '$REDIS_ARGS'; raw results in $OUT" >&2

RESULTS="$OUT/results.jsonl"
: >"$RESULTS"
BENCH_LIMIT=$(python3 -c "print(int(float('$DURATION')) + 180)")

HZ=$(getconf CLK_TCK)
# Busy CPU of the whole machine over one second, in % of one core.
machine_busy() {
  local a b
  read -r _ u1 n1 s1 _ _ i1 q1 t1 _ </proc/stat
  sleep 1
  read -r _ u2 n2 s2 _ _ i2 q2 t2 _ </proc/stat
  a=$((u1 + n1 + s1 + i1 + q1 + t1))
  b=$((u2 + n2 + s2 + i2 + q2 + t2))
  echo $(((b - a) * 100 / HZ))
}
wait_quiet() {
  local busy waited=0
  while :; do
    busy=$(machine_busy)
    if ((busy < QUIET)); then break; fi
    if ((waited >= QUIET_WAIT)); then
      echo "#   machine still ${busy}% busy after ${waited}s; running anyway" >&2
      return
    fi
    waited=$((waited + 1))
  done
  ((waited == 0)) || echo "#   waited ${waited}s for background load to drop (now ${busy}%)" >&2
}

run_bench() {  # target pipeline op rep
  local target=$1 pipeline=$2 op=$3 rep=$4
  local args=(--clients "$CLIENTS" --pipeline "$pipeline" --value-size 100 --keyspace 100000
    --duration "$DURATION" --threads "$BENCH_THREADS" --seed "$rep" --json
    --label "rep=$rep")
  if [[ "$op" == get ]]; then args+=(--ratio 1:0 --preload); else args+=(--ratio 0:1); fi
  if [[ "$target" == shardkv ]]; then
    args+=(--target shardkv --cluster "$NODE_ADDR" --server-pid "$NODE_PID")
  else
    args+=(--target redis --redis "$REDIS_ADDR" --server-pid "$REDIS_PID")
  fi
  echo "# $target pipeline=$pipeline $op rep=$rep" >&2
  wait_quiet
  timeout "$BENCH_LIMIT" nice -n "$NICE" "$BENCH_BIN" "${args[@]}" | grep '"phase":"run"' >>"$RESULTS"
}

for rep in $(seq "$REPEAT"); do
  for pipeline in 1 16; do
    for op in get put; do
      for target in shardkv redis; do
        run_bench "$target" "$pipeline" "$op" "$rep"
      done
    done
  done
done

for pipeline in 1 16; do
  for rep in $(seq "$REPEAT"); do
    echo "# redis-benchmark -P $pipeline rep=$rep" >&2
    wait_quiet
    timeout 300 nice -n "$NICE" redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c "$CLIENTS" -n 200000 \
      -t get,set -d 100 -P "$pipeline" --csv >"$OUT/redis-benchmark-P$pipeline-rep$rep.csv"
  done
done

python3 - "$OUT" "$REPEAT" <<'PY'
import csv, glob, json, statistics, sys
out, repeat = sys.argv[1], int(sys.argv[2])
rows = [json.loads(l) for l in open(f"{out}/results.jsonl") if l.strip()]

def med(xs):
    return statistics.median(xs) if xs else float("nan")

def pick(target, pipeline, op):
    ratio = "1:0" if op == "GET" else "0:1"
    return [r for r in rows if r["target"] == target and r["pipeline"] == pipeline
            and r["ratio"] == ratio]

rb = {}
for path in glob.glob(f"{out}/redis-benchmark-P*-rep*.csv"):
    p = int(path.split("-P")[1].split("-")[0])
    with open(path) as f:
        for rec in csv.DictReader(f):
            rb.setdefault((p, rec["test"]), []).append(float(rec["rps"]))

print(f"Medians of {repeat} runs. Latency in microseconds. CPU: % of one core (2 cores = 200%) and "
      "microseconds of CPU per op; 'other' = the rest of the machine during the run.")
print()
print("| workload | target | ops/s | p50 | p99 | p99.9 | client CPU | client us/op | server CPU | "
      "server us/op | other | shardkv/redis ops/s | shardkv/redis CPU per op | redis-benchmark ops/s |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for pipeline in (1, 16):
    for op in ("GET", "PUT"):
        s, r = pick("shardkv", pipeline, op), pick("redis", pipeline, op)
        def m(xs, k):
            return med([x.get(k, float("nan")) for x in xs])
        ratio = m(s, "ops_per_s") / m(r, "ops_per_s") if s and r else float("nan")
        cpu_s = m(s, "client_cpu_us_per_op") + m(s, "server_cpu_us_per_op")
        cpu_r = m(r, "client_cpu_us_per_op") + m(r, "server_cpu_us_per_op")
        cpu_ratio = cpu_s / cpu_r if s and r else float("nan")
        rbk = med(rb.get((pipeline, "GET" if op == "GET" else "SET"), []))
        for name, xs in (("shardkv", s), ("redis", r)):
            other = m(xs, "machine_cpu_pct") - m(xs, "client_cpu_pct") - m(xs, "server_cpu_pct")
            first = name == "shardkv"
            print(f"| {op} c={xs[0]['clients'] if xs else '?'} P={pipeline} | {name} | "
                  f"{m(xs, 'ops_per_s'):,.0f} | {m(xs, 'p50_us'):.0f} | {m(xs, 'p99_us'):.0f} | "
                  f"{m(xs, 'p999_us'):.0f} | {m(xs, 'client_cpu_pct'):.0f}% | "
                  f"{m(xs, 'client_cpu_us_per_op'):.1f} | {m(xs, 'server_cpu_pct'):.0f}% | "
                  f"{m(xs, 'server_cpu_us_per_op'):.1f} | {other:.0f}% | "
                  f"{(f'**{ratio:.2f}x**' if first else '')} | {(f'{cpu_ratio:.2f}x' if first else '')} | "
                  f"{(f'{rbk:,.0f}' if not first else '')} |")
errors = sum(r["errors"] for r in rows)
print()
print(f"errors across all runs: {errors}; per-run ops/s (shardkv, redis) by workload:")
for pipeline in (1, 16):
    for op in ("GET", "PUT"):
        s = [round(x["ops_per_s"]) for x in pick("shardkv", pipeline, op)]
        r = [round(x["ops_per_s"]) for x in pick("redis", pipeline, op)]
        print(f"  {op} P={pipeline}: shardkv {s}  redis {r}")
PY
