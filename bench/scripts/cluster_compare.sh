#!/usr/bin/env bash
# Replication cost: shardkv-bench against a 3-node local cluster at RF=3 and RF=1, in ring and
# jump mode, beside a single node and redis-server, all in one run (ratios are only meaningful
# within a run on this shared machine). 50 clients, no pipelining, 100-byte values, GET and PUT.
#
#   bench/scripts/cluster_compare.sh [--duration S] [--build DIR]
#
# Prints one markdown row per configuration and workload. Every process it starts is stopped
# by the exit trap; all traffic stays on 127.0.0.1.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BUILD="$ROOT/build-release"
DURATION=5
while (($#)); do
  case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    -h|--help) bench_usage; exit 0 ;;
    *) echo "usage: $0 [--duration S] [--build DIR]" >&2; exit 2 ;;
  esac
done
bench_paths "$BUILD"
bench_need_bins "build them: cmake --build $BUILD -j2 --target shardkv_cli shardkv_node_bin kv_bench" \
  "$SHARDKV_CLI" "$NODE_BIN" "$BENCH_BIN"
bench_need_tools redis-server redis-cli python3 timeout
bench_workdir shardkv-cluster-bench

run_bench() {  # label, extra args...
  local label=$1
  shift
  for op in get put; do
    local ratio=1:0 extra=(--preload)
    [[ $op == put ]] && ratio=0:1 && extra=()
    local json
    json=$(timeout $((DURATION * 4 + 120)) "$BENCH_BIN" "$@" --clients 50 --pipeline 1 --ratio "$ratio" \
      --value-size 100 --keyspace 100000 --duration "$DURATION" --json "${extra[@]}" | tail -n 1)
    python3 - "$label" "$op" "$json" <<'PY'
import json, sys
label, op, raw = sys.argv[1], sys.argv[2], sys.argv[3]
r = json.loads(raw)
print(f"| {label} | {op.upper()} | {r.get('ops_per_s', 0):,.0f} | {r.get('p50_us')} / {r.get('p99_us')} | {r.get('client_cpu_pct', 0):.0f}% | {r.get('errors', 0)} |")
PY
  done
}

echo "| configuration | op | ops/s | p50 / p99 us | client CPU | errors |"
echo "|---|---|---:|---|---:|---:|"

# Redis, for scale.
start_redis "$WORK/redis" "$WORK/redis.log"
run_bench "redis-server" --target redis --redis "$REDIS_ADDR"
stop_pid "$REDIS_PID"

# A single node.
start_node "$WORK/single" "$WORK/single.log" "$NODE_BIN"
run_bench "single node" --target shardkv --cluster "$NODE_ADDR"
stop_pid "$NODE_PID"

for mode in ring jump; do
  for rf in 1 3; do
    rm -rf "$WORK/cluster"
    cluster_up "$WORK/cluster" "$mode" "$rf"
    run_bench "3 nodes, $mode, RF=$rf" --target shardkv --cluster "$(cluster_seeds "$WORK/cluster")"
    cluster_down "$WORK/cluster"
  done
done
