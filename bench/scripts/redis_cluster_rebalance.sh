#!/usr/bin/env bash
# Redis Cluster rebalance onto a new empty master, timed, as a reference point for shardkv's own
# migration. Everything runs on 127.0.0.1 in a fresh temp directory; for each run it
#   1. starts 3 `redis-server --cluster-enabled yes` masters (no replicas, --appendonly no,
#      --save ''), on free ports (port and port+10000, the cluster bus, both probed free), creates
#      the cluster with `redis-cli --cluster create ... --cluster-replicas 0 --cluster-yes` and
#      waits for cluster_state:ok on every node;
#   2. loads KEYS keys "key:<i>" with VALUE_SIZE-byte values through redis-cluster-load
#      (bench/redis_cluster_load.cc: CLUSTER SLOTS once, CRC16 slot per key, one thread and one
#      pipelined hiredis connection per master, 1000 SETs per round trip), times it, and checks
#      that the masters' DBSIZEs add up to KEYS;
#   3. starts a 4th empty master, `redis-cli --cluster add-node`s it, waits until
#      `redis-cli --cluster check` is clean (all nodes agree, 4 known nodes everywhere), then times
#      (wall clock) `redis-cli --cluster rebalance HOST:PORT --cluster-use-empty-masters
#      [--cluster-pipeline P]`; the new master's DBSIZE is the number of keys moved, and the
#      DBSIZE sum is checked again;
#   4. prints a summary and one machine-readable line per run:
#      RESULT redis_rebalance keys=N moved=M seconds=S keys_per_s=R pipeline=P slots_moved=X
#             load_seconds=L load_keys_per_s=Q value_size=B
# Every redis-server it started is stopped by the exit trap (also on error or Ctrl-C).
#
# The rebalance time covers the whole redis-cli run: its initial cluster check, the planning, and
# per slot SETSLOT IMPORTING/MIGRATING, then CLUSTER GETKEYSINSLOT + MIGRATE ... KEYS in batches
# of --cluster-pipeline keys (redis-cli's default is 10), then SETSLOT NODE on every master. So
# keys_per_s = moved / seconds is an end-to-end rate, not the MIGRATE rate alone. With 4096 slots
# to move, the per-slot round trips dominate at small KEYS, and --cluster-pipeline matters at
# large KEYS: seen 2026-11-30 on a shared 2-vCPU box (redis 7.0.15, 1M keys x 100 B, 250,057
# moved), 18.5 s and 25.1 s with the default 10, 14.2 s with 100, 9.8 s with 1000.
#
# Usage: bench/scripts/redis_cluster_rebalance.sh [--keys N] [--value-size B] [--pipeline LIST]
#                                                 [--build DIR] [--loader PATH] [--keep]
#   --keys N          keys to load (env KEYS, default 1000000)
#   --value-size B    value bytes (env VALUE_SIZE, default 100)
#   --pipeline LIST   comma-separated --cluster-pipeline values, one full fresh run (new cluster,
#                     new load) per value; "default" runs without the flag, i.e. redis-cli's 10
#                     (env PIPELINE, default "default"). E.g. --pipeline default,100
#   --build DIR       CMake build dir holding bench/redis-cluster-load (default: the first of
#                     build-kvbench, build-release, build that has it); if none has it, the
#                     loader is compiled with g++ into the temp dir (needs libhiredis-dev)
#   --loader PATH     use this redis-cluster-load binary
#   --keep            keep the temp dir (logs, nodes.conf) instead of deleting it
#   -h, --help        this text
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KEYS=${KEYS:-1000000}
VALUE_SIZE=${VALUE_SIZE:-100}
PIPELINE=${PIPELINE:-default}
BUILD=""
LOADER=""

while [[ $# -gt 0 ]]; do
  case "$1" in
    --keys) KEYS=$2; shift 2 ;;
    --value-size) VALUE_SIZE=$2; shift 2 ;;
    --pipeline) PIPELINE=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --loader) LOADER=$2; shift 2 ;;
    --keep) BENCH_KEEP=1; shift ;;
    -h|--help) bench_usage; exit 0 ;;
    *) echo "redis_cluster_rebalance.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ $KEYS =~ ^[0-9]+$ && $VALUE_SIZE =~ ^[0-9]+$ ]] || { echo "KEYS and VALUE_SIZE must be integers" >&2; exit 2; }
bench_need_tools redis-server redis-cli timeout
bench_workdir redis-cluster-rebalance

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
now() { date +%s.%N; }
fsub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
fdiv() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.0f", a / b; else print 0 }'; }
rcli() { local port=$1; shift; timeout 30 redis-cli -h 127.0.0.1 -p "$port" "$@"; }

# --- the loader ---------------------------------------------------------------------------------
if [[ -z $LOADER ]]; then
  candidates=()
  if [[ -n $BUILD ]]; then candidates=("$BUILD"); else candidates=("$ROOT/build-kvbench" "$ROOT/build-release" "$ROOT/build"); fi
  for b in "${candidates[@]}"; do
    if [[ -x $b/bench/redis-cluster-load ]]; then LOADER=$b/bench/redis-cluster-load; break; fi
  done
fi
if [[ -z $LOADER ]]; then
  log "no built redis-cluster-load; compiling bench/redis_cluster_load.cc with g++ -O2"
  # shellcheck disable=SC2046
  g++ -std=c++20 -O2 -Wall -Wextra "$ROOT/bench/redis_cluster_load.cc" \
    $(pkg-config --cflags --libs hiredis 2>/dev/null || echo -lhiredis) -pthread \
    -o "$WORK/redis-cluster-load" || bench_die "could not compile the loader"
  LOADER=$WORK/redis-cluster-load
fi
[[ -x $LOADER ]] || bench_die "loader $LOADER is not executable"

# --- redis-server helpers -----------------------------------------------------------------------
# start_master DIR -> sets STARTED_PORT, on a port P with P+10000 (the cluster bus) free too.
# Retries on another port if the server does not come up (someone else took the port between
# the probe and the bind).
start_master() {
  local dir=$1 port pid
  mkdir -p "$dir"
  for _ in 1 2 3 4 5; do
    bench_free_port 10000
    port=$FREE_PORT
    redis-server --port "$port" --bind 127.0.0.1 --protected-mode no --daemonize no \
      --cluster-enabled yes --cluster-config-file "$dir/nodes.conf" --cluster-node-timeout 5000 \
      --dir "$dir" --appendonly no --save '' --logfile "$dir/redis.log" &
    pid=$!
    bench_track "$pid"
    if wait_redis "$port" "$pid" 100; then STARTED_PORT=$port; return 0; fi
    stop_pid "$pid"
  done
  bench_die "redis-server did not start" "$dir/redis.log"
}

wait_state_ok() {  # ports...
  local p ok
  for _ in $(seq 600); do
    ok=1
    for p in "$@"; do rcli "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || ok=0; done
    ((ok)) && return 0
    sleep 0.1
  done
  bench_die "cluster_state never became ok"
}

# Converged: every node knows all N nodes (no handshake/fail flags) and redis-cli --cluster check
# is clean (slot coverage, all nodes agree).
wait_converged() {  # expected_nodes ports...
  local n=$1 p ok out
  shift
  for _ in $(seq 300); do
    ok=1
    for p in "$@"; do
      out=$(rcli "$p" cluster nodes 2>/dev/null) || { ok=0; break; }
      [[ $(grep -c . <<<"$out") -eq $n ]] || ok=0
      grep -Eq 'handshake|fail|noaddr' <<<"$out" && ok=0
      rcli "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || ok=0
    done
    if ((ok)); then
      out=$(timeout 60 redis-cli --cluster check "127.0.0.1:$1" 2>&1) || ok=0
      grep -q 'All nodes agree about slots configuration' <<<"$out" || ok=0
      grep -Eq '\[(ERR|WARNING)\]' <<<"$out" && ok=0
      ((ok)) && return 0
    fi
    sleep 0.2
  done
  echo "$out" >&2
  bench_die "cluster did not converge to $n nodes"
}

dbsize_sum() {  # ports...
  local p s=0
  for p in "$@"; do s=$((s + $(rcli "$p" dbsize))); done
  echo "$s"
}

# Number of slots the node on port owns (from its own "myself" line of CLUSTER NODES).
slots_of() {
  rcli "$1" cluster nodes | awk '/myself/ {
    n = 0
    for (i = 9; i <= NF; i++) {
      if ($i ~ /^\[/) continue            # migrating/importing markers
      k = split($i, r, "-"); n += (k == 2) ? r[2] - r[1] + 1 : 1
    }
    print n }'
}

# --- one run ------------------------------------------------------------------------------------
RESULTS=()
run_once() {  # pipeline ("default" or a number)
  local pl=$1 dir="$WORK/run-$1" ports=() p i
  mkdir -p "$dir"
  log "run pipeline=$pl: starting 3 masters"
  for i in 1 2 3; do start_master "$dir/m$i"; ports+=("$STARTED_PORT"); done
  local create_args=()
  for p in "${ports[@]}"; do create_args+=("127.0.0.1:$p"); done
  timeout 120 redis-cli --cluster create "${create_args[@]}" --cluster-replicas 0 --cluster-yes \
    >"$dir/create.log" 2>&1 || bench_die "cluster create failed" "$dir/create.log"
  wait_state_ok "${ports[@]}"
  wait_converged 3 "${ports[@]}"
  log "cluster up on ports ${ports[*]}"

  log "loading $KEYS keys of $VALUE_SIZE bytes"
  local t0 t1 load_secs load_line
  t0=$(now)
  load_line=$(timeout 3600 "$LOADER" --seed "127.0.0.1:${ports[0]}" --keys "$KEYS" \
    --value-size "$VALUE_SIZE" 2>"$dir/load.log" | tail -n 1) || bench_die "load failed" "$dir/load.log"
  t1=$(now)
  load_secs=$(fsub "$t1" "$t0")
  local loaded
  loaded=$(dbsize_sum "${ports[@]}")
  [[ $loaded -eq $KEYS ]] || bench_die "DBSIZE sum after load is $loaded, expected $KEYS"
  log "loaded: $load_line (wall ${load_secs}s incl. connect); DBSIZE sum $loaded"

  log "adding a 4th empty master"
  start_master "$dir/m4"
  local newp=$STARTED_PORT
  timeout 120 redis-cli --cluster add-node "127.0.0.1:$newp" "127.0.0.1:${ports[0]}" \
    >"$dir/add-node.log" 2>&1 || bench_die "add-node failed" "$dir/add-node.log"
  ports+=("$newp")
  wait_converged 4 "${ports[@]}"
  log "4 nodes agree; rebalancing (log: $dir/rebalance.log)"

  local pl_args=()
  [[ $pl != default ]] && pl_args=(--cluster-pipeline "$pl")
  t0=$(now)
  timeout 7200 redis-cli --cluster rebalance "127.0.0.1:${ports[0]}" --cluster-use-empty-masters \
    "${pl_args[@]}" >"$dir/rebalance.log" 2>&1 || bench_die "rebalance failed" "$dir/rebalance.log"
  t1=$(now)
  local secs moved slots total kps
  secs=$(fsub "$t1" "$t0")
  moved=$(rcli "$newp" dbsize)
  slots=$(slots_of "$newp")
  total=$(dbsize_sum "${ports[@]}")
  [[ $total -eq $KEYS ]] || bench_die "DBSIZE sum after rebalance is $total, expected $KEYS"
  wait_converged 4 "${ports[@]}"
  kps=$(fdiv "$moved" "$secs")
  local per_node=()
  for p in "${ports[@]}"; do per_node+=("$(rcli "$p" dbsize)"); done

  echo
  echo "== Redis Cluster rebalance, --cluster-pipeline $pl (redis-server $(redis-server --version | awk '{sub(/^v=/, "", $3); print $3}'))"
  echo "keys loaded:            $KEYS x ${VALUE_SIZE} B in ${load_secs} s ($(fdiv "$KEYS" "$load_secs") keys/s)"
  echo "keys per master after:  ${per_node[*]} (last = new master, $slots slots)"
  echo "keys moved to new:      $moved"
  echo "rebalance wall seconds: $secs"
  echo "keys/s moved:           $kps"
  local line
  line="RESULT redis_rebalance keys=$KEYS moved=$moved seconds=$secs keys_per_s=$kps pipeline=$pl slots_moved=$slots load_seconds=$load_secs load_keys_per_s=$(fdiv "$KEYS" "$load_secs") value_size=$VALUE_SIZE"
  echo "$line"
  RESULTS+=("$line")
  bench_stop_tracked
  ((BENCH_KEEP)) || rm -rf "$dir"
}

IFS=',' read -r -a pipelines <<<"$PIPELINE"
for pl in "${pipelines[@]}"; do
  [[ $pl == default || $pl =~ ^[0-9]+$ ]] || bench_die "bad pipeline value: $pl"
  run_once "$pl"
done
if ((${#RESULTS[@]} > 1)); then  # recap, prefixed so that grep ^RESULT counts each run once
  echo
  printf '# %s\n' "${RESULTS[@]}"
fi
