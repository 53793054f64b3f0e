#!/usr/bin/env bash
# The cost of TLS, for shardkv and for redis-server, measured in one run on this machine:
#   - makes a throw-away CA and certificates with the openssl command in a private temp dir;
#   - starts two single-node shardkv clusters (one plain, one with --tls-* on the node, both
#     with the same secret) and two redis-servers (one plain, one --tls-port with the same
#     certificates, tls-auth-clients yes like shardkv), all on 127.0.0.1;
#   - drives the shardkv pair with shardkv-bench (50 clients, 100-byte values, GET after a
#     preload and PUT, pipeline 1 and 16), and the redis pair with redis-benchmark (same
#     clients and sizes, --tls for the TLS one), interleaving plain and TLS, --repeat times;
#   - times --oneshots one-shot `shardkv get` commands against each node (process start,
#     connect, TLS and secret handshakes, one request), the cost a CLI user or a short-lived
#     client sees;
#   - prints a markdown table of medians: ops/s, p99, CPU per op, and TLS/plain ratios for both
#     systems; raw output stays in --out.
#
# Usage: bench/scripts/tls_compare.sh [--build DIR] [--duration SECONDS] [--repeat N]
#                                     [--clients N] [--oneshots N] [--out DIR]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD="$ROOT/build-release"
DURATION=5
REPEAT=3
CLIENTS=50
ONESHOTS=40
OUT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --oneshots) ONESHOTS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) bench_usage; exit 0 ;;
    *) echo "tls_compare.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

bench_paths "$BUILD"
bench_need_bins "run: cmake --build $BUILD -j2 --target kv_bench shardkv_node_bin shardkv_cli" \
  "$NODE_BIN" "$BENCH_BIN" "$SHARDKV_CLI"
bench_need_tools openssl redis-server redis-cli redis-benchmark python3
bench_workdir tls_compare
[[ -n "$OUT" ]] || OUT=$(mktemp -d /tmp/tls_compare-out.XXXXXX)
mkdir -p "$OUT"

# --- certificates: one CA; one certificate for 127.0.0.1 used by the servers and the clients.
PKI="$WORK/pki"
mkdir -p "$PKI"
(
  cd "$PKI"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=bench CA" -keyout ca.key -out ca.pem
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=bench" \
    -keyout cert.key -out cert.csr
  printf "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n" >ext.cnf
  openssl x509 -req -in cert.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile ext.cnf -out cert.pem
) >"$OUT/openssl.log" 2>&1 || bench_die "openssl failed" "$OUT/openssl.log"
printf 'bench-cluster-secret-0123456789' >"$WORK/secret"
chmod 600 "$WORK/secret"
TLS_FILES=(--tls-ca "$PKI/ca.pem" --tls-cert "$PKI/cert.pem" --tls-key "$PKI/cert.key")

# --- shardkv: a plain node and a TLS node, both with the secret.
START_NODE_CLI_ARGS=(--auth-secret-file "$WORK/secret")
start_node "$WORK/plain" "$OUT/plain.log" "$NODE_BIN" --threads 2 --auth-secret-file "$WORK/secret"
PLAIN_ADDR=$NODE_ADDR PLAIN_PID=$NODE_PID
START_NODE_CLI_ARGS=(--auth-secret-file "$WORK/secret" "${TLS_FILES[@]}")
start_node "$WORK/tls" "$OUT/tls.log" "$NODE_BIN" --threads 2 --auth-secret-file "$WORK/secret" \
  "${TLS_FILES[@]}"
TLS_ADDR=$NODE_ADDR TLS_PID=$NODE_PID

# --- redis: plain, and TLS only (port 0 disables its plain port).
start_redis "$WORK/redis-plain" "$OUT/redis-plain.log"
RPLAIN_PORT=$REDIS_PORT
bench_free_port
RTLS_PORT=$FREE_PORT
mkdir -p "$WORK/redis-tls"
nice -n "$BENCH_NICE" redis-server --port 0 --tls-port "$RTLS_PORT" --tls-cert-file "$PKI/cert.pem" \
  --tls-key-file "$PKI/cert.key" --tls-ca-cert-file "$PKI/ca.pem" --tls-auth-clients yes \
  --save '' --appendonly no --dir "$WORK/redis-tls" >"$OUT/redis-tls.log" 2>&1 &
RTLS_PID=$!
bench_track "$RTLS_PID"
REDIS_TLS_CLI=(--tls --cacert "$PKI/ca.pem" --cert "$PKI/cert.pem" --key "$PKI/cert.key")
for _ in $(seq 100); do
  [[ $(redis-cli -p "$RTLS_PORT" "${REDIS_TLS_CLI[@]}" ping 2>/dev/null) == PONG ]] && break
  kill -0 "$RTLS_PID" 2>/dev/null || bench_die "the TLS redis-server exited" "$OUT/redis-tls.log"
  sleep 0.1
done

echo "# shardkv plain $PLAIN_ADDR, TLS $TLS_ADDR; redis plain :$RPLAIN_PORT, TLS :$RTLS_PORT" >&2
echo "# ${DURATION}s x $REPEAT, $CLIENTS clients; raw results in $OUT" >&2
RESULTS="$OUT/results.jsonl"
: >"$RESULTS"
LIMIT=$(python3 -c "print(int(float('$DURATION')) + 180)")

run_shardkv() {  # kind pipeline op rep
  local kind=$1 pipeline=$2 op=$3 rep=$4 addr pid extra=()
  if [[ $kind == tls ]]; then addr=$TLS_ADDR pid=$TLS_PID extra=("${TLS_FILES[@]}")
  else addr=$PLAIN_ADDR pid=$PLAIN_PID; fi
  local args=(--target shardkv --cluster "$addr" --server-pid "$pid" --clients "$CLIENTS"
    --pipeline "$pipeline" --value-size 100 --keyspace 100000 --duration "$DURATION"
    --seed "$rep" --json --label "$kind" --auth-secret-file "$WORK/secret" "${extra[@]}")
  if [[ $op == get ]]; then args+=(--ratio 1:0 --preload); else args+=(--ratio 0:1); fi
  echo "# shardkv $kind P=$pipeline $op rep=$rep" >&2
  timeout "$LIMIT" "$BENCH_BIN" "${args[@]}" | grep '"phase":"run"' >>"$RESULTS"
}

run_redis() {  # kind pipeline rep
  local kind=$1 pipeline=$2 rep=$3 port=$RPLAIN_PORT extra=()
  if [[ $kind == tls ]]; then port=$RTLS_PORT extra=("${REDIS_TLS_CLI[@]}"); fi
  echo "# redis-benchmark $kind P=$pipeline rep=$rep" >&2
  timeout 300 redis-benchmark -h 127.0.0.1 -p "$port" "${extra[@]}" -c "$CLIENTS" -n 200000 \
    -t get,set -d 100 -P "$pipeline" --csv >"$OUT/redis-$kind-P$pipeline-rep$rep.csv"
}

for rep in $(seq "$REPEAT"); do
  for pipeline in 1 16; do
    for op in get put; do
      for kind in plain tls; do run_shardkv "$kind" "$pipeline" "$op" "$rep"; done
    done
    for kind in plain tls; do run_redis "$kind" "$pipeline" "$rep"; done
  done
done

# One-shot commands: each a new process, connection and handshakes.
"$SHARDKV_CLI" put --cluster "$PLAIN_ADDR" --auth-secret-file "$WORK/secret" k v >/dev/null
"$SHARDKV_CLI" put --cluster "$TLS_ADDR" --auth-secret-file "$WORK/secret" "${TLS_FILES[@]}" k v \
  >/dev/null
oneshot() {  # kind -> seconds for ONESHOTS gets
  local kind=$1 addr=$PLAIN_ADDR extra=() start end
  [[ $kind == tls ]] && addr=$TLS_ADDR extra=("${TLS_FILES[@]}")
  start=$(date +%s.%N)
  for _ in $(seq "$ONESHOTS"); do
    "$SHARDKV_CLI" get --cluster "$addr" --auth-secret-file "$WORK/secret" "${extra[@]}" k >/dev/null
  done
  end=$(date +%s.%N)
  python3 -c "print($end - $start)"
}
for rep in $(seq "$REPEAT"); do
  for kind in plain tls; do
    echo "{\"oneshot\":\"$kind\",\"seconds\":$(oneshot "$kind"),\"count\":$ONESHOTS}" >>"$OUT/oneshot.jsonl"
  done
done

python3 - "$OUT" "$REPEAT" <<'PY'
import csv, glob, json, statistics, sys
out, repeat = sys.argv[1], int(sys.argv[2])
rows = [json.loads(l) for l in open(f"{out}/results.jsonl") if l.strip()]
med = lambda xs: statistics.median(xs) if xs else float("nan")

def sk(kind, pipeline, op, key):
    ratio = "1:0" if op == "GET" else "0:1"
    return med([r[key] for r in rows if r["label"] == kind and r["pipeline"] == pipeline
                and r["ratio"] == ratio])

rb = {}
for path in glob.glob(f"{out}/redis-*-P*-rep*.csv"):
    name = path.rsplit("/", 1)[1]
    kind, p = name.split("-")[1], int(name.split("-P")[1].split("-")[0])
    with open(path) as f:
        for rec in csv.DictReader(f):
            rb.setdefault((kind, p, rec["test"]), []).append(float(rec["rps"]))

print(f"Medians of {repeat} runs, {rows[0]['clients'] if rows else '?'} clients, 100-byte values.")
print()
print("| workload | shardkv plain ops/s | shardkv TLS ops/s | shardkv TLS/plain | shardkv CPU us/op plain / TLS | redis plain ops/s | redis TLS ops/s | redis TLS/plain |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for pipeline in (1, 16):
    for op in ("GET", "PUT"):
        p, t = sk("plain", pipeline, op, "ops_per_s"), sk("tls", pipeline, op, "ops_per_s")
        cp = sk("plain", pipeline, op, "client_cpu_us_per_op") + sk("plain", pipeline, op, "server_cpu_us_per_op")
        ct = sk("tls", pipeline, op, "client_cpu_us_per_op") + sk("tls", pipeline, op, "server_cpu_us_per_op")
        test = "GET" if op == "GET" else "SET"
        rp, rt = med(rb.get(("plain", pipeline, test), [])), med(rb.get(("tls", pipeline, test), []))
        print(f"| {op} P={pipeline} | {p:,.0f} | {t:,.0f} | **{t / p:.2f}x** | {cp:.1f} / {ct:.1f} | "
              f"{rp:,.0f} | {rt:,.0f} | **{rt / rp:.2f}x** |")
shots = [json.loads(l) for l in open(f"{out}/oneshot.jsonl") if l.strip()]
for kind in ("plain", "tls"):
    xs = [s["seconds"] * 1000 / s["count"] for s in shots if s["oneshot"] == kind]
    print(f"\none-shot `shardkv get` ({kind}): median {med(xs):.1f} ms per command" if kind == "plain"
          else f"; ({kind}): median {med(xs):.1f} ms per command", end="")
print()
print(f"\nerrors across all shardkv runs: {sum(r['errors'] for r in rows)}")
PY
