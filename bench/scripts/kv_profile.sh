#!/usr/bin/env bash
# Where does the time go? Starts one shardkv node (port 0, private temp dir), drives it with
# shardkv-bench (50 clients, 100-byte values) and, in the middle of each run, samples node and
# load generator with `perf record -e cpu-clock` (software clock: works without hardware
# counters, e.g. in VMs) and counts their syscalls with perf's syscall tracepoints. Prints the
# top self-time symbols of each process and syscalls per op. With --with-redis, does the same
# for redis-server (--save '' --appendonly no) driven by the same load generator, for contrast.
# Stops everything it started.
#
# Without perf (or with --no-perf) it falls back to valgrind --tool=callgrind on the node for
# a short --ops run (about 50x slower, so the numbers are instruction counts, not time).
#
# Usage: bench/scripts/kv_profile.sh [--build DIR] [--seconds N] [--pipeline N] [--top N]
#                                    [--workloads get,put] [--callgraph] [--with-redis]
#                                    [--no-perf] [--out DIR]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD="$ROOT/build-kvbench"
SECONDS_PER_RUN=4
PIPELINE=1
TOP=25
WORKLOADS=get,put
CALLGRAPH=0
WITH_REDIS=0
NO_PERF=0
COUNT_OPS=200000
OUT=""

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --pipeline) PIPELINE=$2; shift 2 ;;
    --top) TOP=$2; shift 2 ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    --callgraph) CALLGRAPH=1; shift ;;
    --with-redis) WITH_REDIS=1; shift ;;
    --no-perf) NO_PERF=1; shift ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) bench_usage; exit 0 ;;
    *) echo "kv_profile.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

bench_paths "$BUILD"
bench_need_bins "run: cmake --build $BUILD -j2 --target kv_bench shardkv_node_bin shardkv_cli" "$NODE_BIN" "$BENCH_BIN" "$SHARDKV_CLI"

bench_workdir kv_profile
[[ -n "$OUT" ]] || OUT=$(mktemp -d /tmp/kv_profile-out.XXXXXX)
mkdir -p "$OUT"

ratio_of() { [[ "$1" == get ]] && echo 1:0 || echo 0:1; }

# --- Fallback: no usable perf (or --no-perf).
if [[ $NO_PERF == 1 ]] || ! perf stat -e cpu-clock true >/dev/null 2>&1; then
  command -v valgrind >/dev/null || { echo "kv_profile.sh: neither perf nor valgrind" >&2; exit 2; }
  echo "# no perf: callgrind on the node (instruction counts of short runs, not time)"
  for wl in ${WORKLOADS//,/ }; do
    start_node "$WORK/node" "$OUT/node.log" \
      SHARDKV_HUGEPAGE_MALLOC=0 valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.$wl.out" "$NODE_BIN"
    extra=()
    [[ $wl == get ]] && extra=(--preload --keyspace 5000)
    # Generous timeouts: the node runs about 50x slower under callgrind.
    timeout 600 "$BENCH_BIN" --cluster "$NODE_ADDR" --ratio "$(ratio_of "$wl")" --ops 5000 \
      --pipeline "$PIPELINE" --timeout-ms 60000 "${extra[@]}"
    stop_pid "$NODE_PID"
    echo "## node ($wl): top functions by instructions (inclusive of nothing: self cost)"
    callgrind_annotate "$OUT/callgrind.$wl.out" 2>/dev/null | sed -n '/^Ir/,$p' | head -$((TOP + 3))
  done
  exit 0
fi

SYSCALLS=recvfrom,sendto,epoll_wait,epoll_ctl,read,write,readv,writev,recvmsg,sendmsg,futex
EVENTS=""
for call in ${SYSCALLS//,/ }; do EVENTS+="${EVENTS:+,}syscalls:sys_enter_$call"; done
if ! perf stat -e syscalls:sys_enter_sendto true >/dev/null 2>&1; then EVENTS=""; fi
CG_ARGS=()
[[ $CALLGRAPH == 1 ]] && CG_ARGS=(--call-graph "dwarf,32768")

report() {  # perf.data title
  echo "## $2: top self time (perf cpu-clock samples)"
  perf report -i "$1" --stdio --no-children --sort dso,symbol --percent-limit 0.4 2>/dev/null |
    grep -v '^#' | grep -v '^$' | grep '%' | sed 's/  \+/ /g; s/ - - *$//' | head -"$TOP" || true
  echo "## $2: by library"
  perf report -i "$1" --stdio --no-children --sort dso 2>/dev/null |
    grep -v '^#' | grep -v '^$' | grep '%' | sed 's/  \+/ /g' | head -8 || true
}

# profile NAME SERVER_PID BENCH_TARGET_ARGS...
profile() {
  local name=$1 server_pid=$2
  shift 2
  local target=("$@")
  timeout 300 "$BENCH_BIN" "${target[@]}" --preload --ops 50 --pipeline 16 >/dev/null
  for wl in ${WORKLOADS//,/ }; do
    local tag="$name.$wl"
    local common=("${target[@]}" --ratio "$(ratio_of "$wl")" --pipeline "$PIPELINE"
      --server-pid "$server_pid")
    # 1. Sampling, in the middle of a run. The bench is not under `timeout` because perf must
    #    attach to the bench itself; --duration and its request timeout bound it.
    "$BENCH_BIN" "${common[@]}" --duration $((SECONDS_PER_RUN * 3)) >"$OUT/bench.$tag.txt" &
    local bench_pid=$!
    bench_track "$bench_pid"
    sleep "$SECONDS_PER_RUN"  # past warm-up and connection set-up
    perf record -q -F 1999 -e cpu-clock "${CG_ARGS[@]}" -p "$server_pid" \
      -o "$OUT/perf.server.$tag" -- sleep "$SECONDS_PER_RUN" >/dev/null 2>&1 &
    local p1=$!
    perf record -q -F 1999 -e cpu-clock "${CG_ARGS[@]}" -p "$bench_pid" \
      -o "$OUT/perf.bench.$tag" -- sleep "$SECONDS_PER_RUN" >/dev/null 2>&1 &
    local p2=$!
    wait "$p1" "$p2" || true
    wait "$bench_pid" || true
    bench_untrack "$bench_pid"
    # 2. Syscalls per op: count over a run of exactly COUNT_OPS ops (no warm-up), whole bench
    #    process, server attached for the same span.
    if [[ -n "$EVENTS" ]]; then
      perf stat -x, -e "$EVENTS" -p "$server_pid" -o "$OUT/syscalls.server.$tag" &
      p1=$!
      sleep 0.3
      timeout 300 perf stat -x, -e "$EVENTS" -o "$OUT/syscalls.bench.$tag" -- \
        "$BENCH_BIN" "${common[@]}" --ops "$COUNT_OPS" --warmup-ops 0 >/dev/null
      kill -INT "$p1" 2>/dev/null || true
      wait "$p1" || true
    fi
    echo
    echo "# ===== $name, workload $wl ($(ratio_of "$wl")), 50 clients, pipeline $PIPELINE"
    grep -E '^run' "$OUT/bench.$tag.txt" || cat "$OUT/bench.$tag.txt"
    report "$OUT/perf.server.$tag" "$name server ($wl)"
    report "$OUT/perf.bench.$tag" "$name load generator ($wl)"
    if [[ -n "$EVENTS" ]]; then
      for who in server bench; do
        echo "## $name $who ($wl): syscalls per op (over $COUNT_OPS ops)"
        awk -F, -v ops="$COUNT_OPS" '$3 ~ /sys_enter/ && $1+0 > 0 {
            sub("syscalls:sys_enter_", "", $3); printf "  %-12s %.2f per op\n", $3, $1/ops }' \
          "$OUT/syscalls.$who.$tag"
      done
    fi
  done
}

start_node "$WORK/node" "$OUT/node.log" "$NODE_BIN"
echo "# node $NODE_ADDR pid $NODE_PID; $SECONDS_PER_RUN s per sample; pipeline $PIPELINE"
profile shardkv "$NODE_PID" --target shardkv --cluster "$NODE_ADDR"
if [[ $WITH_REDIS == 1 ]]; then
  start_redis "$WORK/redis" "$OUT/redis.log"
  echo "# redis $REDIS_ADDR pid $REDIS_PID"
  profile redis "$REDIS_PID" --target redis --redis "$REDIS_ADDR"
fi
echo
echo "# raw data (perf.data files, bench output) in $OUT"
