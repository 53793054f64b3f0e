#!/usr/bin/env bash
# Anti-entropy figures (design.md "Anti-entropy"; bench/README.md "Anti-entropy"):
#
#   1. damage repair: three nodes at RF=3 (W=Q=2) loaded with --keys keys of 100 B; node 3 is
#      stopped, --ranges runs of consecutive keys of its `data` column family are deleted behind
#      its back with RocksDB's `ldb deleterange` (0.1% of its keys by default), it is started again
#      and `shardkv repair --json` runs. Prints the keys removed, the keys streamed (and their
#      ratio), the tree bytes exchanged, the repair's time, and the time of one full scan of node
#      3's data (`ldb dump --count_only` on the stopped node) to compare it with;
#   2. identical replicas: `shardkv repair` again, right after: the tree exchange alone, in bytes
#      per million keys;
#   3. background cost: a 9:1 GET:PUT shardkv-bench load of --bg-seconds against the three nodes,
#      alternately with background repair off and with it on at the default rate and a period
#      short enough (--repair-period) that it runs the whole time; --rounds pairs. Prints the
#      throughput of each run and the ratio on/off.
#
# Every node runs with --no-background-repair in parts 1 and 2, so that the command alone
# repairs. Stops everything it started.
#
# Usage: bench/scripts/repair_bench.sh [--build DIR] [--keys N] [--ranges N] [--permille N]
#                                      [--bg-seconds S] [--rounds N] [--repair-period MS]
#                                      [--skip-background] [--out DIR]
#   --build DIR        build tree with tools/shardkv, tools/shardkv-node, bench/shardkv-bench
#                      (default build-release)
#   --keys N           keys loaded (default 1000000)
#   --permille N       keys removed from node 3, per mille of what it holds (default 1: 0.1%)
#   --ranges N         runs of consecutive keys they are removed in (default 10)
#   --bg-seconds S     length of each background-cost run (default 20)
#   --rounds N         off/on pairs of background-cost runs (default 2)
#   --repair-period MS background period of the "on" runs (default 60000)
#   --skip-background  parts 1 and 2 only
#   --out DIR          keep the logs and JSON here (default a new /tmp directory)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD="$ROOT/build-release"
KEYS=1000000
PERMILLE=1
RANGES=10
BG_SECONDS=20
ROUNDS=2
REPAIR_PERIOD=60000
SKIP_BG=0
OUT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --keys) KEYS=$2; shift 2 ;;
    --permille) PERMILLE=$2; shift 2 ;;
    --ranges) RANGES=$2; shift 2 ;;
    --bg-seconds) BG_SECONDS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --repair-period) REPAIR_PERIOD=$2; shift 2 ;;
    --skip-background) SKIP_BG=1; shift ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) bench_usage; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

bench_need_tools ldb python3
bench_paths "$BUILD"
bench_need_bins "build it: cmake --build $BUILD" "$SHARDKV_CLI" "$NODE_BIN" "$BENCH_BIN"
bench_workdir repair_bench
[[ -n "$OUT" ]] || OUT=$(mktemp -d /tmp/repair_bench-out.XXXXXX)
mkdir -p "$OUT"

# Three nodes on fixed free ports (a restarted node must come back on the address in the map).
declare -a PORTS PIDS
for id in 1 2 3; do
  bench_free_port
  PORTS[id]=$FREE_PORT
done
SEEDS="127.0.0.1:${PORTS[1]},127.0.0.1:${PORTS[2]},127.0.0.1:${PORTS[3]}"

start() {  # start ID [NODE FLAG...]
  local id=$1
  shift
  mkdir -p "$WORK/node-$id"
  rm -f "$WORK/node-$id/port"
  "$NODE_BIN" --id "$id" --data "$WORK/node-$id" --listen "127.0.0.1:${PORTS[$id]}" \
    --log-level info "$@" >>"$OUT/node-$id.log" 2>&1 &
  PIDS[id]=$!
  bench_track "${PIDS[$id]}"
  for _ in $(seq 600); do
    [[ -s $WORK/node-$id/port ]] && return 0
    kill -0 "${PIDS[$id]}" 2>/dev/null || bench_die "node $id exited" "$OUT/node-$id.log"
    sleep 0.1
  done
  bench_die "node $id wrote no port in 60 s" "$OUT/node-$id.log"
}

# Polls (60 s at most) until every node answers stats as a member of the formed cluster.
await_cluster() {
  for _ in $(seq 600); do
    local status
    if status=$("$SHARDKV_CLI" --cluster "$SEEDS" --timeout 2000 cluster status 2>/dev/null) &&
      ! grep -q "needs-repair\|down\|starting" <<<"$status"; then
      return 0
    fi
    sleep 0.1
  done
  bench_die "the cluster did not come up in 60 s" "$OUT/node-1.log"
}

now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2 - $1:.2f}')"; }

echo "== 1. damage repair: $KEYS keys x 100 B at RF=3, ${PERMILLE} per mille of node 3's removed"
for id in 1 2 3; do start "$id" --no-background-repair; done
"$SHARDKV_CLI" cluster init "$SEEDS" --yes --replicas 3 >"$OUT/init.log" 2>&1 ||
  bench_die "cluster init failed" "$OUT/init.log"
t0=$(now)
"$SHARDKV_CLI" --cluster "$SEEDS" --timeout 30000 load --count "$KEYS" --value-size 100 \
  --json >"$OUT/load.json" 2>"$OUT/load.log" || bench_die "load failed" "$OUT/load.log"
echo "loaded $KEYS keys in $(elapsed "$t0" "$(now)") s"

stop_pid "${PIDS[3]}"
DB3="$WORK/node-3/db"
t0=$(now)
HELD=$(ldb --db="$DB3" --column_family=data dump --count_only 2>/dev/null |
  sed -n 's/^Keys in range: *//p')
SCAN_S=$(elapsed "$t0" "$(now)")
[[ -n "$HELD" ]] || bench_die "ldb could not count node 3's keys"
echo "node 3 holds $HELD entries; one full scan of them (ldb dump --count_only): $SCAN_S s"

# The removal: RANGES runs spread evenly over node 3's key order, PERMILLE/1000 of its keys.
PER_RUN=$((HELD * PERMILLE / 1000 / RANGES))
ldb --db="$DB3" --column_family=data scan --hex --no_value 2>/dev/null |
  sed 's/ *:.*//' >"$WORK/keys.hex"
python3 - "$WORK/keys.hex" "$RANGES" "$PER_RUN" >"$WORK/runs" <<'EOF'
import sys
keys = [l.strip() for l in open(sys.argv[1]) if l.strip()]
runs, per = int(sys.argv[2]), int(sys.argv[3])
step = len(keys) // runs
for r in range(runs):
    first = r * step + step // 2
    print(keys[first], keys[first + per])  # deleterange's end is exclusive: `per` keys
EOF
while read -r from to; do
  ldb --db="$DB3" --column_family=data --hex deleterange "$from" "$to" >/dev/null
done <"$WORK/runs"
LEFT=$(ldb --db="$DB3" --column_family=data dump --count_only 2>/dev/null |
  sed -n 's/^Keys in range: *//p')
REMOVED=$((HELD - LEFT))
echo "removed $REMOVED entries in $RANGES runs of $PER_RUN"

start 3 --no-background-repair
await_cluster
set +e
"$SHARDKV_CLI" --cluster "$SEEDS" --timeout 600000 repair --json >"$OUT/repair1.json" \
  2>"$OUT/repair1.log"
rc=$?
"$SHARDKV_CLI" --cluster "$SEEDS" --timeout 600000 repair --json >"$OUT/repair2.json" \
  2>"$OUT/repair2.log"
rc2=$?
set -e
[[ $rc == 0 && $rc2 == 0 ]] || bench_die "repair exited $rc / $rc2" "$OUT/repair1.log"
python3 - "$OUT/repair1.json" "$OUT/repair2.json" "$REMOVED" "$SCAN_S" "$KEYS" <<'EOF'
import json, sys
r1, r2 = (json.load(open(p)) for p in sys.argv[1:3])
removed, scan_s, keys = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
print(f"repair: ranges {r1['ranges_compared']} compared, {r1['ranges_differed']} differed; "
      f"keys streamed {r1['keys_streamed']} ({r1['bytes_streamed']} B) for {removed} removed: "
      f"{r1['keys_streamed'] / max(removed, 1):.2f}x; records fetched {r1['keys_fetched']}; "
      f"tree bytes {r1['tree_bytes']}; {r1['duration_s']:.2f} s = "
      f"{r1['duration_s'] / scan_s:.2f}x one scan of node 3 ({scan_s:.2f} s)")
print(f"identical replicas: {r2['keys_streamed']} keys streamed, tree bytes {r2['tree_bytes']} "
      f"= {r2['tree_bytes'] * 1e6 / keys / 1024:.1f} KiB per million keys, "
      f"{r2['duration_s']:.2f} s")
EOF

[[ $SKIP_BG == 0 ]] || exit 0
echo "== 3. background cost: 9:1 GET:PUT, ${BG_SECONDS} s runs, background off / on"
run_load() {  # run_load LABEL
  "$BENCH_BIN" --cluster "$SEEDS" --ratio 9:1 --clients 50 \
    --duration "$BG_SECONDS" --label "$1" --json >"$OUT/bg-$1.json" 2>"$OUT/bg-$1.log" ||
    bench_die "shardkv-bench failed" "$OUT/bg-$1.log"
  python3 -c "import json,sys; print(next(r['ops_per_s'] for r in map(json.loads, open(sys.argv[1]))
                                       if r['phase'] == 'run'))" "$OUT/bg-$1.json"
}
restart_all() {
  for id in 1 2 3; do stop_pid "${PIDS[$id]}"; done
  for id in 1 2 3; do start "$id" "$@"; done
  await_cluster
}
# The bench's own keys (key:000000000000 ...), so that its GETs find values.
"$BENCH_BIN" --cluster "$SEEDS" --clients 50 --preload --ops 50 >"$OUT/bg-preload.log" 2>&1 ||
  bench_die "the preload failed" "$OUT/bg-preload.log"
declare -a OFF ON
for round in $(seq "$ROUNDS"); do
  restart_all --no-background-repair
  OFF+=("$(run_load "off-$round")")
  restart_all --repair-period "$REPAIR_PERIOD"
  ON+=("$(run_load "on-$round")")
  # What the background did meanwhile: ranges compared by the three nodes.
  "$SHARDKV_CLI" --cluster "$SEEDS" stats --json >"$OUT/bg-on-$round-stats.json" 2>/dev/null || true
  python3 - "$OUT/bg-on-$round-stats.json" <<'PY' || true
import json, sys
doc = json.load(open(sys.argv[1]))
nodes = doc if isinstance(doc, list) else doc.get("nodes", [])
def get(n, k):
    for part in (n, n.get("counters", {}), n.get("stats", {})):
        if isinstance(part, dict) and k in part:
            return int(part[k])
    return 0
print("  background during the run: ranges compared",
      sum(get(n, "repair_ranges_compared") for n in nodes), "passes",
      sum(get(n, "repair_passes") for n in nodes))
PY
  echo "round $round: off ${OFF[-1]} ops/s, on ${ON[-1]} ops/s"
done
python3 - "${OFF[*]}" "${ON[*]}" <<'EOF'
import sys
off = [float(x) for x in sys.argv[1].split()]
on = [float(x) for x in sys.argv[2].split()]
print(f"background on/off: {sum(on) / sum(off):.3f} (mean off {sum(off) / len(off):.0f}, "
      f"on {sum(on) / len(on):.0f} ops/s)")
EOF
grep -h "background repair" "$OUT"/node-*.log | tail -n 5 || true
echo "logs and JSON in $OUT"
