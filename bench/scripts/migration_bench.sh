#!/usr/bin/env bash
# Migration benchmark (issue "rebalancer", bench/README.md "Migration"):
#   1. unthrottled scale-out 3 -> 4 with KEYS keys of 100-byte values, RF=1 and RF=3, ring and
#      jump: copies/s, MB/s, total time (from `rebalance status --json`);
#   2. the same at the default throttle (32 MB/s, 2 streams) while shardkv-bench runs a 9:1
#      GET/PUT load: client ops/s in 2-second windows before vs during the migration (the dip);
#   3. Redis Cluster's rebalance of the same key count at RF=1, in the same run
#      (bench/scripts/redis_cluster_rebalance.sh), as a wall-time ratio.
# Everything runs on 127.0.0.1 in temp dirs; every process started is stopped on exit.
#
# Usage: bench/scripts/migration_bench.sh [--keys N] [--build DIR] [--skip-redis] [--only unthrottled|throttled]
#        (env RFS="1 3" and MODES="ring jump" pick the configurations)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KEYS=${KEYS:-1000000}
BUILD=${BUILD:-$ROOT/build}
SKIP_REDIS=0
ONLY=""
RFS=${RFS:-"1 3"}        # replication factors of the unthrottled runs
MODES=${MODES:-"ring jump"}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --keys) KEYS=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --skip-redis) SKIP_REDIS=1; shift ;;
    --only) ONLY=$2; shift 2 ;;
    -h|--help) bench_usage; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
bench_paths "$BUILD"
export PATH="$BUILD/tools/shardkv-node:$PATH"
bench_need_bins "cmake --build $BUILD --target shardkv_cli shardkv_node_bin kv_bench" \
  "$SHARDKV_CLI" "$BENCH_BIN" "$NODE_BIN"
bench_workdir shardkv-migbench

calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }

json_field() { # json_field NAME < json
  sed -n "s/.*\"$1\":\\(\"[^\"]*\"\\|[-0-9.e]*\\).*/\\1/p" | tr -d '"' | head -1
}

# A fresh 3-node cluster for one row, in its own directory under WORK; sets CLUSTER_DIR.
ROW=0
start_cluster() { # start_cluster MODE RF
  ROW=$((ROW + 1))
  CLUSTER_DIR="$WORK/row$ROW-$1-rf$2"
  cluster_up "$CLUSTER_DIR" "$1" "$2"
}

# Takes the row's cluster down and frees its disk (1M keys at RF=3 is a few hundred MB).
stop_cluster() { cluster_down "$1"; rm -rf "$1"; }

unthrottled() {
  local mode=$1 rf=$2 d t0 t1 load_s st
  start_cluster "$mode" "$rf"
  d=$CLUSTER_DIR
  t0=$(date +%s.%N)
  "$SHARDKV_CLI" --dir "$d" load --count "$KEYS" --concurrency 256 >/dev/null
  t1=$(date +%s.%N)
  load_s=$(calc "$t1 - $t0")
  "$SHARDKV_CLI" --dir "$d" cluster add-node --yes --rate 0 >/dev/null
  "$SHARDKV_CLI" --dir "$d" rebalance watch --interval 1000 >/dev/null
  st=$("$SHARDKV_CLI" --dir "$d" rebalance status --json)
  local copies bytes secs planned state frac ideal
  copies=$(json_field moved_copies <<<"$st"); bytes=$(json_field moved_bytes <<<"$st")
  secs=$(json_field elapsed_s <<<"$st"); planned=$(json_field planned_copies <<<"$st")
  state=$(json_field state <<<"$st"); frac=$(json_field moved_fraction <<<"$st")
  ideal=$(json_field ideal_fraction <<<"$st")
  printf 'RESULT migration mode=%s rf=%s keys=%s state=%s copies=%s planned=%s fraction=%s ideal=%s seconds=%s copies_per_s=%.0f mb_per_s=%.1f load_s=%.1f\n' \
    "$mode" "$rf" "$KEYS" "$state" "$copies" "$planned" "$frac" "$ideal" "$secs" \
    "$(calc "$copies / $secs")" "$(calc "$bytes / $secs / 1048576")" "$load_s"
  "$SHARDKV_CLI" --dir "$d" verify --count "$KEYS" --concurrency 256 | tail -1
  stop_cluster "$d"
}

throttled() {
  local mode=$1 rf=$2 d s before=() during=() st secs
  start_cluster "$mode" "$rf"
  d=$CLUSTER_DIR
  "$SHARDKV_CLI" --dir "$d" load --count "$KEYS" --concurrency 256 >/dev/null
  s=$(cluster_seeds "$d")
  run_window() { "$BENCH_BIN" --target shardkv --cluster "$s" --clients 16 --ratio 9:1 --keyspace 100000 --duration 2 --json 2>/dev/null | json_field ops_per_s; }
  "$BENCH_BIN" --target shardkv --cluster "$s" --clients 16 --ratio 0:1 --keyspace 100000 --ops 100000 >/dev/null 2>&1 || true
  for _ in 1 2 3 4 5; do before+=("$(run_window)"); done
  "$SHARDKV_CLI" --dir "$d" cluster add-node --yes >/dev/null
  # Windows while the change runs (the bench keeps its seeds: the client follows map changes).
  while :; do
    st=$("$SHARDKV_CLI" --dir "$d" rebalance status --json 2>/dev/null || true)
    case "$(json_field state <<<"$st")" in done|failed|cancelled) break ;; esac
    during+=("$(run_window)")
  done
  secs=$(json_field elapsed_s <<<"$st")
  local avg_b avg_d
  avg_b=$(printf '%s\n' "${before[@]}" | awk '{s+=$1} END {printf "%.0f", s/NR}')
  if [[ ${#during[@]} -gt 0 ]]; then
    avg_d=$(printf '%s\n' "${during[@]}" | awk '{s+=$1} END {printf "%.0f", s/NR}')
  else
    avg_d=$avg_b
  fi
  printf 'RESULT throttled mode=%s rf=%s keys=%s state=%s seconds=%s copies=%s ops_before=%s ops_during=%s windows_during=%s dip_pct=%.1f client_errors=%s\n' \
    "$mode" "$rf" "$KEYS" "$(json_field state <<<"$st")" "$secs" "$(json_field moved_copies <<<"$st")" \
    "$avg_b" "$avg_d" "${#during[@]}" "$(calc "(1 - $avg_d / $avg_b) * 100")" \
    "$(json_field client_errors <<<"$st")"
  stop_cluster "$d"
}

echo "# machine: $(nproc) vCPU, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -z $ONLY || $ONLY == unthrottled ]]; then
  for mode in $MODES; do for rf in $RFS; do unthrottled "$mode" "$rf"; done; done
fi
if [[ -z $ONLY || $ONLY == throttled ]]; then
  for mode in $MODES; do throttled "$mode" 3; done
fi
if [[ $SKIP_REDIS == 0 ]]; then
  KEYS=$KEYS "$ROOT/bench/scripts/redis_cluster_rebalance.sh" --build "$BUILD" | grep '^RESULT' || true
fi
