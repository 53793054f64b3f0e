#!/usr/bin/env bash
# Installs the Debian 12 packages shardkv builds, tests and benchmarks against.
# Idempotent: only missing packages are installed, and `apt-get update` runs at most once.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config ccache clang libclang-rt-14-dev clang-format
  librocksdb-dev libasio-dev capnproto libcapnp-dev catch2
  # RocksDB's ldb: the anti-entropy test damages a stopped node's database with it
  rocksdb-tools
  libxxhash-dev libcli11-dev libspdlog-dev libfmt-dev libbenchmark-dev libssl-dev
  libmemcached-dev redis-server redis-tools libhiredis-dev
  # Redis's own test runner (bench/scripts/redis_suite.sh)
  tcl
  libtomlplusplus-dev
  # consensus (src/consensus): Canonical's C Raft, with shardkv's own raft_io
  libraft-dev
  # the metrics endpoint: HTTP (cpp-httplib), and promtool, which the tests validate scrapes with
  libcpp-httplib-dev prometheus
  # redis-py, the plain and the cluster client of tests/redis/redis_py_test.py
  python3-redis
  # node-redis 4 (createClient, createCluster), the Node client of tests/redis/node_redis_test.js,
  # and a node to run it (kept when one is installed already)
  nodejs node-redis
  # the multi-host test bed (tests/multihost): namespaces, packet filters, wall-clock skew
  iproute2 iptables faketime
  # the architecture picture: docs/architecture.svg is generated from docs/architecture.dot
  graphviz
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# redis-server's package starts a system daemon on 6379; tests start their own on port 0-style
# free ports, so stop the system one to keep the machine quiet (ignore if no init system).
if [[ " ${missing[*]} " == *" redis-server "* ]]; then
  ($SUDO service redis-server stop || true) >/dev/null 2>&1
fi
# prometheus's package starts a server on 9090; only its promtool is used (by the tests).
if [[ " ${missing[*]} " == *" prometheus "* ]]; then
  ($SUDO service prometheus stop || true) >/dev/null 2>&1
fi
echo "install-deps: done"
