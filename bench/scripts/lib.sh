# bench/scripts/lib.sh: the start/stop code the bench scripts share. Not run on its own: each
# script sources it right after `set -euo pipefail`:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Sourcing sets ROOT (the repository) and BENCH_NAME (the script's file name), and installs the
# EXIT trap (INT and TERM exit 130 through it). On exit, whatever happened, it takes down the
# shardkv clusters started with cluster_up, stops the processes started through this file or
# handed to bench_track, and removes WORK (unless BENCH_KEEP=1). The script's exit code is kept.
#
# Functions that start something record it in variables of the calling shell: call them
# directly, never inside $(...), or the exit trap will not know what to stop.
#
#   bench_usage                  print the calling script's header comment (for --help)
#   bench_die MSG [LOG]          MSG and the tail of LOG on stderr, exit 1
#   bench_need_tools TOOL...     exit 2 unless every TOOL is on PATH
#   bench_paths BUILD            set SHARDKV_CLI, NODE_BIN and BENCH_BIN inside build dir BUILD
#   bench_need_bins HINT BIN...  exit 2 naming the first BIN that is not executable, and HINT
#   bench_workdir PREFIX         set WORK to a new /tmp/PREFIX.XXXXXX, removed on exit
#   bench_track PID              stop PID on exit
#   bench_untrack PID            forget PID (the script has waited for it itself)
#   stop_pid PID...              SIGTERM, at most 10 s for a clean exit, SIGKILL; reap; untrack
#   bench_stop_tracked           stop_pid every tracked process
#   bench_free_port [OFFSET...]  set FREE_PORT to a random port P in 20000-50000 on which, and on
#                                every P+OFFSET, nothing listens on 127.0.0.1, not handed out
#                                before in this run (a start must still retry: it is a probe)
#   wait_redis PORT PID [TRIES]  wait (TRIES x 0.1 s, default 50) for redis on PORT to answer
#                                PONG; fails early if PID exits
#   start_redis DIR LOG [ARG...] redis-server on 127.0.0.1 and a free port, no persistence, its
#                                files in DIR, log in LOG, ARGs last (they override); sets
#                                REDIS_PID, REDIS_PORT, REDIS_ADDR
#   start_node DATA LOG CMD...   a single shardkv node: CMD (the node binary, or a wrapper such
#                                as `valgrind ... NODE_BIN`, plus node options) with --id 1
#                                --data DATA --listen 127.0.0.1:0 --log-level warn, output
#                                appended to LOG; DATA is emptied first; waits (60 s at most)
#                                for DATA/port, then forms it (`cluster init`, RF=1; the array
#                                START_NODE_CLI_ARGS adds CLI flags: a secret, TLS files); sets
#                                NODE_PID, NODE_ADDR
#   cluster_up DIR MODE RF [N]   `shardkv cluster up` of N (3) nodes on free ports in DIR
#   cluster_down DIR             `shardkv cluster down` (cluster_up'd clusters also go on exit)
#   cluster_seeds DIR            print host:port,... of the cluster's nodes not removed
#
# BENCH_NICE (default 0) is the nice level of the nodes and redis-servers started here.
#
# The variables set here are read by the scripts that source this file:
# shellcheck shell=bash disable=SC2034

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH_NAME=$(basename "$0")
BENCH_NICE=${BENCH_NICE:-0}
BENCH_KEEP=${BENCH_KEEP:-0}
BENCH_PIDS=()
BENCH_CLUSTERS=()
BENCH_USED_PORTS=" "
WORK=""

bench_usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

bench_die() {
  echo "$BENCH_NAME: $1" >&2
  if [[ -n ${2:-} && -f $2 ]]; then
    echo "--- tail of $2:" >&2
    tail -n 20 "$2" >&2
  fi
  exit 1
}

bench_need_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$BENCH_NAME: $tool not found" >&2; exit 2; }
  done
}

bench_paths() {
  # Absolute: `cluster up` starts the nodes from another working directory.
  local dir
  dir=$(cd "$1" 2>/dev/null && pwd) || dir=$1
  set -- "$dir"
  SHARDKV_CLI="$1/tools/shardkv/shardkv"
  NODE_BIN="$1/tools/shardkv-node/shardkv-node"
  BENCH_BIN="$1/bench/shardkv-bench"
}

bench_need_bins() {
  local hint=$1 bin
  shift
  for bin in "$@"; do
    [[ -x $bin ]] || { echo "$BENCH_NAME: $bin not built; $hint" >&2; exit 2; }
  done
}

bench_workdir() { WORK=$(mktemp -d "/tmp/$1.XXXXXX"); }

bench_track() { BENCH_PIDS+=("$1"); }

bench_untrack() {
  local p pid kept=()
  for p in "${BENCH_PIDS[@]+"${BENCH_PIDS[@]}"}"; do
    for pid in "$@"; do [[ $p == "$pid" ]] && continue 2; done
    kept+=("$p")
  done
  BENCH_PIDS=("${kept[@]+"${kept[@]}"}")
}

stop_pid() {
  local pid live=() kept=()
  for pid in "$@"; do
    [[ -n $pid ]] || continue
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      live+=("$pid")
    fi
  done
  for _ in $(seq 100); do
    ((${#live[@]})) || break
    kept=()
    for pid in "${live[@]}"; do kill -0 "$pid" 2>/dev/null && kept+=("$pid"); done
    live=("${kept[@]+"${kept[@]}"}")
    ((${#live[@]})) && sleep 0.1
  done
  for pid in "${live[@]+"${live[@]}"}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "$@"; do [[ -n $pid ]] && { wait "$pid" 2>/dev/null || true; }; done
  bench_untrack "$@"
}

bench_stop_tracked() { stop_pid "${BENCH_PIDS[@]+"${BENCH_PIDS[@]}"}"; }

# The offsets are optional:
# shellcheck disable=SC2120
bench_free_port() {
  local p off busy
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 30001))
    [[ $BENCH_USED_PORTS == *" $p "* ]] && continue
    busy=0
    for off in 0 "$@"; do
      if (exec 3<>"/dev/tcp/127.0.0.1/$((p + off))") 2>/dev/null; then busy=1; break; fi
    done
    ((busy)) && continue
    BENCH_USED_PORTS+="$p "
    FREE_PORT=$p
    return 0
  done
  bench_die "found no free port"
}

wait_redis() {
  local port=$1 pid=$2 tries=${3:-50}
  for _ in $(seq "$tries"); do
    [[ "$(timeout 2 redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" == PONG ]] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

start_redis() {
  local dir=$1 log=$2
  shift 2
  mkdir -p "$dir"
  for _ in $(seq 20); do
    # shellcheck disable=SC2119
    bench_free_port
    nice -n "$BENCH_NICE" redis-server --bind 127.0.0.1 --port "$FREE_PORT" --save '' \
      --appendonly no --daemonize no --protected-mode yes --dir "$dir" --logfile "$log" "$@" &
    REDIS_PID=$!
    bench_track "$REDIS_PID"
    if wait_redis "$FREE_PORT" "$REDIS_PID"; then
      REDIS_PORT=$FREE_PORT
      REDIS_ADDR="127.0.0.1:$REDIS_PORT"
      return 0
    fi
    stop_pid "$REDIS_PID"  # lost the port to someone else, or it died: try another
  done
  REDIS_PID=""
  bench_die "could not start redis-server" "$log"
}

start_node() {
  local data=$1 log=$2
  shift 2
  rm -rf "$data"
  mkdir -p "$data"
  nice -n "$BENCH_NICE" "$@" --id 1 --data "$data" --listen 127.0.0.1:0 --log-level warn \
    >>"$log" 2>&1 &
  NODE_PID=$!
  bench_track "$NODE_PID"
  for _ in $(seq 600); do
    [[ -s $data/port ]] && break
    kill -0 "$NODE_PID" 2>/dev/null || bench_die "the node exited" "$log"
    sleep 0.1
  done
  [[ -s $data/port ]] || bench_die "the node wrote no port in 60 s" "$log"
  NODE_ADDR="127.0.0.1:$(cat "$data/port")"
  # A fresh node is unformed (it serves no data) until a cluster is formed from it. The CLI
  # gets the flags that follow --cli (a secret, TLS files) through $START_NODE_CLI_ARGS.
  "$SHARDKV_CLI" cluster init "$NODE_ADDR" --yes --replicas 1 --write-quorum 1 --read-quorum 1 \
    ${START_NODE_CLI_ARGS[@]+"${START_NODE_CLI_ARGS[@]}"} >>"$log" 2>&1 ||
    bench_die "cluster init of the node failed" "$log"
}

cluster_up() {
  local dir=$1 mode=$2 rf=$3 nodes=${4:-3}
  BENCH_CLUSTERS+=("$dir")
  "$SHARDKV_CLI" --dir "$dir" cluster up --nodes "$nodes" --mode "$mode" --replicas "$rf" \
    --base-port 0 >/dev/null
}

cluster_down() {
  local d kept=()
  "$SHARDKV_CLI" --dir "$1" cluster down >/dev/null
  for d in "${BENCH_CLUSTERS[@]+"${BENCH_CLUSTERS[@]}"}"; do [[ $d == "$1" ]] || kept+=("$d"); done
  BENCH_CLUSTERS=("${kept[@]+"${kept[@]}"}")
}

cluster_seeds() {
  local n s=""
  for n in "$1"/node-*; do
    [[ -f $n/removed ]] && continue
    s+="127.0.0.1:$(cat "$n/port"),"
  done
  echo "${s%,}"
}

bench_exit() {
  local rc=$? d
  set +e
  for d in "${BENCH_CLUSTERS[@]+"${BENCH_CLUSTERS[@]}"}"; do
    "$SHARDKV_CLI" --dir "$d" cluster down >/dev/null 2>&1
  done
  bench_stop_tracked
  if [[ -n $WORK ]]; then
    if ((BENCH_KEEP)); then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
  fi
  exit "$rc"
}
trap bench_exit EXIT
trap 'exit 130' INT TERM
