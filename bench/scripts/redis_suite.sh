#!/usr/bin/env bash
# Redis's own unit tests (type/string, expire, keyspace) in external-server mode, against a
# redis-server 7.0.15 and against a 3-node shardkv cluster (the Redis port of node 1), in one
# run on free ports in a temp dir; prints passed / failed / exceptions per unit and target and
# the names of the failing tests (from the runner's [ok] / [err] / [exception] lines).
#
# SUITE_DIR is a tree with Redis's runner (`runtest`, tests/test_helper.tcl, tests/support,
# tests/unit/...). Redis's files are never part of this repository; on this machine a tree is
# kept in /work/redis-tests-7.0 (its tests/README.md says where each file comes from). Each unit
# runs as
#   ./runtest --host 127.0.0.1 --port P --singledb --ignore-encoding --ignore-digest \
#             --tags "-needs:debug -needs:repl" --single UNIT
# In that mode an error reply outside an assertion (an unknown or refused command) is an
# [exception] that ends the unit. When the runner has --durable (and --tolerate-setup-errors,
# the one of /work/redis-tests-7.0), shardkv is run a second time with them, so that every test
# of a unit runs and its failure is listed.
#
# Usage: bench/scripts/redis_suite.sh SUITE_DIR [--build DIR | --bin DIR] [--out DIR]
#   --bin DIR  a directory holding `shardkv` and `shardkv-node` instead of a build tree
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $# -ge 1 && $1 != -* ]] || { bench_usage; exit 2; }
SUITE=$(cd "$1" && pwd)
shift
BUILD="$ROOT/build-release"
BIN=""
OUT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) bench_usage; exit 0 ;;
    *) echo "redis_suite.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x $SUITE/runtest && -f $SUITE/tests/test_helper.tcl ]] ||
  { echo "redis_suite.sh: $SUITE has no runtest and tests/test_helper.tcl" >&2; exit 2; }

bench_paths "$BUILD"
if [[ -n $BIN ]]; then SHARDKV_CLI="$BIN/shardkv" NODE_BIN="$BIN/shardkv-node"; fi
bench_need_bins "run: cmake --build $BUILD -j2 --target shardkv_node_bin shardkv_cli" \
  "$NODE_BIN" "$SHARDKV_CLI"
bench_need_tools redis-server redis-cli tclsh python3
export SHARDKV_NODE_BIN="$NODE_BIN"
bench_workdir redis_suite
[[ -n "$OUT" ]] || OUT=$(mktemp -d /tmp/redis_suite-out.XXXXXX)
mkdir -p "$OUT"

UNITS=(unit/type/string unit/expire unit/keyspace)
ARGS=(--singledb --ignore-encoding --ignore-digest --tags "-needs:debug -needs:repl")
TOLERANT=()
if grep -q -- '--durable' "$SUITE/tests/test_helper.tcl"; then TOLERANT+=(--durable); fi
if grep -q -- '--tolerate-setup-errors' "$SUITE/tests/test_helper.tcl"; then
  TOLERANT+=(--tolerate-setup-errors)
fi

start_redis "$WORK/redis" "$OUT/redis-server.log"
cluster_up "$WORK/cluster" ring 3 3
SK_PORT=$("$SHARDKV_CLI" --dir "$WORK/cluster" cluster status --json | python3 -c '
import json, sys
nodes = sorted(json.load(sys.stdin)["nodes"], key=lambda n: n["id"])
print(nodes[0]["redis_address"].rsplit(":", 1)[1])')
echo "# redis-server :$REDIS_PORT, shardkv node 1 :$SK_PORT; logs in $OUT" >&2

run_units() {  # target port extra-args...
  local target=$1 port=$2 unit log
  shift 2
  for unit in "${UNITS[@]}"; do
    log="$OUT/$target-${unit//\//_}.log"
    echo "# $target $unit: ./runtest --host 127.0.0.1 --port $port ${ARGS[*]} $* --single $unit" >&2
    # The runner exits non-zero when a test fails: that is a result, not an error here.
    (cd "$SUITE" && timeout 900 ./runtest --host 127.0.0.1 --port "$port" "${ARGS[@]}" "$@" \
      --single "$unit") >"$log" 2>&1 || echo "runtest exit $?" >>"$log"
  done
}

run_units redis-server "$REDIS_PORT"
run_units shardkv "$SK_PORT"
if ((${#TOLERANT[@]})); then run_units shardkv-tolerant "$SK_PORT" "${TOLERANT[@]}"; fi

python3 - "$OUT" "${UNITS[@]}" <<'PY'
import os, re, sys
out, units = sys.argv[1], sys.argv[2:]
targets = [t for t in ("redis-server", "shardkv", "shardkv-tolerant")
           if os.path.exists(f"{out}/{t}-{units[0].replace('/', '_')}.log")]
print("| target | unit | passed | failed | exceptions |")
print("|---|---|---:|---:|---:|")
failing = {}
for t in targets:
    total = [0, 0, 0]
    for u in units:
        text = open(f"{out}/{t}-{u.replace('/', '_')}.log", errors="replace").read()
        ok = len(re.findall(r"^\[ok\]: ", text, re.M))
        errs = re.findall(r"^\[err\]: (.*)$", text, re.M)
        exc = re.findall(r"^\[exception\]: (.*)$", text, re.M)
        total = [total[0] + ok, total[1] + len(errs), total[2] + len(exc)]
        print(f"| {t} | {u} | {ok} | {len(errs)} | {len(exc)} |")
        names = [re.sub(r" in tests/\S+$", "", e) for e in errs] + ["EXCEPTION " + e for e in exc]
        failing[(t, u)] = names
    print(f"| {t} | **all** | **{total[0]}** | **{total[1]}** | **{total[2]}** |")
for (t, u), names in failing.items():
    if names:
        print(f"\n{t} {u}: {len(names)} failing")
        for n in names:
            print(f"  - {n}")
PY
