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
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD="$ROOT/build-release"
DURATION=5
while (($#)); do
  case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    *) echo "usage: $0 [--duration S] [--build DIR]" >&2; exit 2 ;;
  esac
done
CLI="$BUILD/tools/shardkv/shardkv"
NODE="$BUILD/tools/shardkv-node/shardkv-node"
BENCH="$BUILD/bench/shardkv-bench"
for b in "$CLI" "$NODE" "$BENCH"; do [[ -x $b ]] || { echo "missing $b (build first)" >&2; exit 2; }; done
WORK=$(mktemp -d /tmp/shardkv-cluster-bench.XXXXXX)
REDIS_PID=""
cleanup() {
  "$CLI" --dir "$WORK/cluster" cluster down >/dev/null 2>&1 || true
  [[ -n $REDIS_PID ]] && kill "$REDIS_PID" 2>/dev/null || true
  [[ -n ${NODE_PID:-} ]] && kill "$NODE_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

run_bench() {  # label, extra args...
  local label=$1
  shift
  for op in get put; do
    local ratio=1:0 extra=(--preload)
    [[ $op == put ]] && ratio=0:1 && extra=()
    local json
    json=$(timeout $((DURATION * 4 + 120)) "$BENCH" "$@" --clients 50 --pipeline 1 --ratio "$ratio" \
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
REDIS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
  >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
run_bench "redis-server" --target redis --redis "127.0.0.1:$REDIS_PORT"
kill "$REDIS_PID"; REDIS_PID=""

# A single node.
"$NODE" --id 1 --data "$WORK/single" --log-level warn >"$WORK/single.log" 2>&1 &
NODE_PID=$!
for _ in $(seq 100); do [[ -s $WORK/single/port ]] && break; sleep 0.1; done
run_bench "single node" --target shardkv --cluster "127.0.0.1:$(cat "$WORK/single/port")"
kill "$NODE_PID"; wait "$NODE_PID" 2>/dev/null || true; NODE_PID=""

for mode in ring jump; do
  for rf in 1 3; do
    rm -rf "$WORK/cluster"
    "$CLI" --dir "$WORK/cluster" cluster up --nodes 3 --mode "$mode" --replicas "$rf" \
      --base-port 0 >/dev/null 2>&1
    seeds=$(cat "$WORK"/cluster/node-*/port | sed 's/^/127.0.0.1:/' | paste -sd,)
    run_bench "3 nodes, $mode, RF=$rf" --target shardkv --cluster "$seeds"
    "$CLI" --dir "$WORK/cluster" cluster down >/dev/null 2>&1
  done
done
