#!/usr/bin/env bash
# From a fresh clone on Debian 12: install what is missing, build, and run the main job.
# Until the cluster lands, the main job is the placement lab: it compares every placement
# algorithm on the seed articles' setup (10 nodes, user:0..user:N-1) and shows uniformity,
# migration on add/remove against the ideal, and lookup cost.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

"$ROOT/tools/install-deps.sh"
cmake -S "$ROOT" -B "$ROOT/build-release" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build-release" -j "$(nproc)" --target shardkv_cli
SHARDKV="$ROOT/build-release/tools/shardkv/shardkv"

echo
echo "== The placement lab: every algorithm on the seeds' setup (10 nodes, 1M keys)"
"$SHARDKV" placement compare --keys "${QUICKSTART_KEYS:-1000000}"
echo
echo "== The seeds' hash finding: raw crc32 does not improve from 100 to 500 vnodes; mixed hashes do"
"$SHARDKV" placement compare --algos ring --hash crc32,crc32-fmix32,xxh3 --vnodes 100,500 \
  --keys "${QUICKSTART_KEYS:-1000000}"
