#!/usr/bin/env bash
# Redis's own test suite, unmodified, run by its real runner (`runtest`) in external-server mode,
# one unit per run, against a redis-server and against a 3-node shardkv cluster (the Redis port
# of node 1), in one run on free ports in a temp dir. Prints, per unit and target, the tests
# passed and failed, and where an exception stopped the unit (the runner ends a unit at the
# first error reply outside an assertion: an unknown or refused command), then the failing
# tests' names.
#
# The suite is Redis 7.0.15's `tests/` and `runtest`, kept beside the project (never copied into
# it): by default ../shared/redis-tests-7.0.15 next to the repository's directory, or SUITE_DIR,
# or the REDIS_TESTS_DIR environment variable. Its README.shardkv.md says how it is run; this
# script does the same: it copies the tree into the temp dir (the runner writes there), links
# /usr/bin's redis-server, redis-cli and redis-benchmark into its src/, and runs each unit as
#   ./runtest --host 127.0.0.1 --port P --singledb --ignore-encoding --ignore-digest \
#             --tags -needs:debug --tags -needs:repl --clients 1 --single UNIT
#
# Usage: bench/scripts/redis_suite.sh [SUITE_DIR] [--units "unit/a unit/b"] [--build DIR |
#                                     --bin DIR] [--out DIR]
#   --units  the units to run (default: type/string expire keyspace type/incr type/hash type/set)
#   --bin    a directory holding `shardkv` and `shardkv-node` instead of a build tree
#   --out    where the runner's logs go (default a new /tmp/redis_suite-out.XXXXXX)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUITE=""
BUILD="$ROOT/build-release"
BIN=""
OUT=""
UNITS=(unit/type/string unit/expire unit/keyspace unit/type/incr unit/type/hash unit/type/set)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --units) read -r -a UNITS <<<"$2"; shift 2 ;;
    -h|--help) bench_usage; exit 0 ;;
    -*) echo "redis_suite.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    *) SUITE=$1; shift ;;
  esac
done
if [[ -z $SUITE ]]; then
  if [[ -n ${REDIS_TESTS_DIR:-} ]]; then SUITE=$REDIS_TESTS_DIR
  else SUITE="$ROOT/../shared/redis-tests-7.0.15"; fi
fi
[[ -x $SUITE/runtest && -f $SUITE/tests/test_helper.tcl ]] || {
  echo "redis_suite.sh: no Redis test suite in $SUITE (runtest, tests/test_helper.tcl);" \
    "pass its directory or set REDIS_TESTS_DIR" >&2
  exit 2
}
SUITE=$(cd "$SUITE" && pwd)

bench_paths "$BUILD"
if [[ -n $BIN ]]; then SHARDKV_CLI="$BIN/shardkv" NODE_BIN="$BIN/shardkv-node"; fi
bench_need_bins "run: cmake --build $BUILD -j2 --target shardkv_node_bin shardkv_cli" \
  "$NODE_BIN" "$SHARDKV_CLI"
bench_need_tools redis-server redis-cli redis-benchmark tclsh python3
export SHARDKV_NODE_BIN="$NODE_BIN"
bench_workdir redis_suite
[[ -n "$OUT" ]] || OUT=$(mktemp -d /tmp/redis_suite-out.XXXXXX)
mkdir -p "$OUT"

# The runner writes its temp files into its own tree: run a copy, with the servers it expects in
# src/ (external mode starts none, but the helpers look for them).
RUNNER="$WORK/suite"
mkdir -p "$RUNNER"
cp -r "$SUITE/." "$RUNNER"
mkdir -p "$RUNNER/src"
for b in redis-server redis-cli redis-benchmark; do ln -sf "$(command -v "$b")" "$RUNNER/src/$b"; done

start_redis "$WORK/redis" "$OUT/redis-server.log"
cluster_up "$WORK/cluster" ring 3 3
SK_PORT=$("$SHARDKV_CLI" --dir "$WORK/cluster" cluster status --json | python3 -c '
import json, sys
nodes = sorted(json.load(sys.stdin)["nodes"], key=lambda n: n["id"])
print(nodes[0]["redis_address"].rsplit(":", 1)[1])')
echo "# redis-server :$REDIS_PORT, shardkv node 1 :$SK_PORT; suite $SUITE; logs in $OUT" >&2

ARGS=(--singledb --ignore-encoding --ignore-digest --tags -needs:debug --tags -needs:repl
  --clients 1)
run_units() {  # target port
  local target=$1 port=$2 unit log
  for unit in "${UNITS[@]}"; do
    log="$OUT/$target-${unit//\//_}.log"
    echo "# $target $unit: ./runtest --host 127.0.0.1 --port $port ${ARGS[*]} --single $unit" >&2
    # The runner exits non-zero when a test fails: that is a result, not an error here. Every
    # key is dropped between units, so that one unit's leftovers cannot fail the next.
    redis-cli -h 127.0.0.1 -p "$port" flushall >/dev/null 2>&1 || true
    (cd "$RUNNER" && timeout 900 ./runtest --host 127.0.0.1 --port "$port" "${ARGS[@]}" \
      --single "$unit") >"$log" 2>&1 || echo "runtest exit $?" >>"$log"
  done
}

run_units redis-server "$REDIS_PORT"
run_units shardkv "$SK_PORT"

python3 - "$OUT" "${UNITS[@]}" <<'PY'
import re, sys
out, units = sys.argv[1], sys.argv[2:]
ansi = re.compile(r"\x1b\[[0-9;]*m")
print("| unit | redis-server passed | failed | shardkv passed | failed | shardkv stopped by |")
print("|---|---:|---:|---:|---:|---|")
details = []
totals = {"redis-server": [0, 0], "shardkv": [0, 0]}
for u in units:
    row = [u]
    stop = ""
    for t in ("redis-server", "shardkv"):
        text = ansi.sub("", open(f"{out}/{t}-{u.replace('/', '_')}.log", errors="replace").read())
        ok = re.findall(r"^\[ok\]: (.*?)(?: \(\d+ ms\))?$", text, re.M)
        errs = re.findall(r"^\[err\]: (.*)$", text, re.M)
        exc = re.search(r"^\[exception\]: (.*)$", text, re.M)
        totals[t][0] += len(ok)
        totals[t][1] += len(errs)
        row += [str(len(ok)), str(len(errs))]
        reason = ""
        if exc:
            # The runner names no test in an exception: the one after the last reported test.
            after = ok[-1] if ok else "(none)"
            first = re.search(r"^(.*?)(?:\n|$)", exc.group(1)).group(1)
            reason = f"exception after \"{after}\": {first}"
        elif "runtest exit 124" in text:
            reason = "timed out (900 s)"
        if t == "shardkv":
            stop = reason or "(ran to the end)"
        elif reason:
            details.append(f"redis-server {u}: {reason}")
        names = [re.sub(r" in tests/\S+$", "", e) for e in errs]
        if names:
            details.append(f"{t} {u}: {len(names)} failed\n" + "\n".join(f"  - {n}" for n in names))
    row.append(stop.replace("|", "\\|"))
    print("| " + " | ".join(row) + " |")
print(f"| **all** | **{totals['redis-server'][0]}** | **{totals['redis-server'][1]}** | "
      f"**{totals['shardkv'][0]}** | **{totals['shardkv'][1]}** | |")
for d in details:
    print("\n" + d)
PY
