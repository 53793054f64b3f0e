#!/usr/bin/env bash
# Installs missing dependencies, checks the lock annotations with clang, then builds and runs
# the whole test suite twice:
#   0. clang -Wthread-safety over the library modules only (syntax only: no objects, no tests);
#   1. a Release build (-Werror) running every test, including the slow multi-process drills and
#      the multi-host bed (label "multihost": network namespaces, needs root; in CI a skipped
#      multihost test fails the stage);
#   2. an ASan+UBSan build running the unit and in-process tests (labels "multiprocess",
#      "multihost" and "bench" excluded: those spawn real node processes and run in the release
#      build only, and their binaries are not built); it compiles in the background, at idle
#      priority, while the release tests of stage 1 run;
#   3. with SHARDKV_LONG=1 or SHARDKV_TSAN=1, a ThreadSanitizer build running the same tests.
# Prints the time of each stage and exits non-zero on the first failure.
#
# Environment:
#   SHARDKV_SKIP_ASAN=1   skip the sanitizer stage (local quick runs; CI never sets it)
#   SHARDKV_SKIP_TSA=1    skip the clang thread-safety stage (local quick runs; CI never sets it)
#   SHARDKV_JOBS=N        build parallelism (default: nproc)
#   SHARDKV_UNITY_SRC=OFF compile the modules and the CLI file by file (default ON: in batches)
#   SHARDKV_TEST_KEYS=N   key count for the heavy integration tests (default small)
#   SHARDKV_LONG=1        the multi-host scenarios with their full fault windows (4x), and the
#                         ThreadSanitizer stage
#   SHARDKV_TSAN=1        the ThreadSanitizer stage alone of the long extras
#   CI=true               a skipped multi-host test (no root, no `ip`) fails the run
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
JOBS=${SHARDKV_JOBS:-$(nproc)}
# Let ccache hit across clones of the repository (CI builds a fresh clone each time).
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=true
START=$(date +%s)

stage() {
  local name=$1
  shift
  local t0
  t0=$(date +%s)
  echo "==> ${name}"
  if ! "$@"; then
    echo "==> ${name}: FAILED after $(($(date +%s) - t0)) s" >&2
    exit 1
  fi
  echo "==> ${name}: ok in $(($(date +%s) - t0)) s"
}

# Every build here compiles the library modules and the CLI eight files to a unit
# (SHARDKV_UNITY_SRC): 280 s of CPU instead of 628 s for a cold release build of them
# (bench/README.md "CI time"), and likewise in the sanitizer and thread-safety builds.
configure() {
  local dir=$1
  shift
  cmake -S "$ROOT" -B "$dir" -DSHARDKV_WERROR=ON -DSHARDKV_UNITY_SRC="${SHARDKV_UNITY_SRC:-ON}" \
    "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
}

build() { cmake --build "$1" -j "$JOBS"; }

run_tests() {
  local dir=$1
  shift
  ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --timeout 900 "$@"
}

stage "install dependencies" "$ROOT/tools/install-deps.sh"

# Every tracked C++ file as .clang-format (Google, 100 columns) formats it: a file that differs
# fails the run and is named (fix with `clang-format -i FILE`). Same clang-format as the
# packages install (Debian's 14), so local and CI agree.
format_check() {
  local files=() bad=() f
  while IFS= read -r f; do
    [[ -f "$ROOT/$f" ]] && files+=("$ROOT/$f")
  done < <(git -C "$ROOT" ls-files '*.cc' '*.h' '*.cpp' '*.hpp')
  # Batches on every core first (one clang-format per file took 72 s); only when a batch
  # differs are the files checked one by one, to name them.
  if printf '%s\0' "${files[@]}" |
    xargs -0 -n 40 -P "$JOBS" clang-format --dry-run --Werror >/dev/null 2>&1; then
    return 0
  fi
  for f in "${files[@]}"; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("${f#"$ROOT"/}")
  done
  if ((${#bad[@]})); then
    printf 'differs from .clang-format (run clang-format -i): %s\n' "${bad[@]}" >&2
  else
    echo "clang-format failed on a batch, yet on no file alone" >&2
  fi
  return 1
}
stage "format (clang-format, every tracked C++ file)" format_check

# Clang's thread-safety analysis checks the GUARDED_BY / REQUIRES annotations
# (src/common/thread_annotations.h); GCC ignores them. Only the src/ modules are compiled, and
# only to -fsyntax-only (the analysis runs in the front end), so this costs a fraction of a
# build. With no objects there is nothing to archive: ar and ranlib are `true`; and since no
# object is ever up to date, the modules are built in one Ninja run, which compiles each file
# once (Make runs one pass per --target and would compile the shared modules again for each).
# The flags go in a build type of their own because CMake's compiler probes (try_compile) use
# CMAKE_CXX_FLAGS and the Debug flags, and a probe compiled with -fsyntax-only cannot link.
thread_safety() {
  local dir="$ROOT/build-tsa" modules
  # Every library module, as src/*/CMakeLists.txt registers them (a new module is included).
  mapfile -t modules < <(sed -n 's/^shardkv_add_module(\(shardkv_[a-z_]*\)).*/\1/p' \
    "$ROOT"/src/*/CMakeLists.txt)
  mkdir -p "$dir"
  configure "$dir" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=ThreadSafety \
    -DCMAKE_CXX_FLAGS_THREADSAFETY="-fsyntax-only -Wthread-safety -Werror=thread-safety" \
    -DCMAKE_AR="$(type -P true)" -DCMAKE_RANLIB="$(type -P true)" \
    -DSHARDKV_BUILD_TESTS=OFF -DSHARDKV_BUILD_BENCH=OFF || return 1
  cmake --build "$dir" -j "$JOBS" --target "${modules[@]}"
}
if [[ "${SHARDKV_SKIP_TSA:-0}" != 1 ]]; then
  stage "clang thread-safety (src/ modules, syntax only)" thread_safety
fi

mkdir -p "$ROOT/build-release" "$ROOT/build-asan"
stage "configure release" configure "$ROOT/build-release" -DCMAKE_BUILD_TYPE=Release
stage "build release" build "$ROOT/build-release"

# The sanitizer build runs in the background while the release tests run: the multi-process and
# multi-host stages mostly wait on their nodes, and a build beside them takes ~20 min off a cold
# run (bench/README.md "CI time"). It runs under SCHED_IDLE (chrt -i) and nice 19, so it only gets
# the CPU the tests leave idle, and it builds no multi-process or multi-host test binary.
ASAN_PID=""
if [[ "${SHARDKV_SKIP_ASAN:-0}" != 1 ]]; then
  # -O1 keeps the sanitizer build fast enough to compile and run on 2 cores; -g1 (line tables
  # only) is all the sanitizers' stack traces use, and compiles a fifth faster than -g.
  stage "configure asan+ubsan" configure "$ROOT/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSHARDKV_SANITIZE=ON -DSHARDKV_BUILD_BENCH=OFF -DSHARDKV_BUILD_PROCESS_TESTS=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1"
  idle=()
  if chrt -i 0 true 2>/dev/null; then idle=(chrt -i 0); fi
  rm -f "$ROOT/build-asan.build.rc"
  # Its own session (setsid), so a failure elsewhere stops the whole build tree at once.
  setsid "${idle[@]}" nice -n 19 bash -c 't0=$(date +%s); cmake --build "$1" -j "$2" >"$1.build.log" 2>&1; rc=$?; echo "$rc $(($(date +%s) - t0))" >"$1.build.rc"' \
    _ "$ROOT/build-asan" "$JOBS" &
  ASAN_PID=$!
  trap '[[ -n "$ASAN_PID" ]] && kill -TERM -- "-$ASAN_PID" 2>/dev/null; true' EXIT
  echo "==> build asan+ubsan: started in the background (log: build-asan.build.log)"
fi
stage "test release (unit + in-process)" run_tests "$ROOT/build-release" -LE "multiprocess|multihost"
# The multi-process drills one at a time: a killed node restarts on its old ephemeral port, and a
# node of a test running in parallel could have taken that port meanwhile (seen once in CI).
stage "test release (multi-process drills, one at a time)" \
  ctest --test-dir "$ROOT/build-release" --output-on-failure -j 1 --timeout 900 -L multiprocess

# The multi-host bed (tests/multihost): one scenario at a time, each printing its figures and
# time. A test that cannot make namespaces prints "MULTIHOST SKIPPED" and CTest counts it as
# skipped; with CI=true that fails the stage, so the bed never passes silently in CI.
multihost() {
  local log="$ROOT/build-release/multihost.log" rc=0
  ctest --test-dir "$ROOT/build-release" --output-on-failure -j 1 --timeout 900 -L multihost \
    -V >"$log" 2>&1 || rc=$?
  # Each scenario's figures, verdict and time, then CTest's summary (the whole log stays).
  grep -E '^[0-9]+: [a-z0-9+-]+: (ops=|EXPECTED FAILURE|held|FAILED)| Test +#' "$log" || true
  grep -E -A 30 '^[0-9]+% tests passed' "$log" || tail -n 30 "$log"
  [[ "$rc" == 0 ]] || return 1
  if ! grep -q 'Test #.*multihost_tests:' "$log"; then
    echo "no multihost test ran (is tests/multihost built?)" >&2
    return 1
  fi
  if grep -q 'MULTIHOST SKIPPED\|\*\*\*Skipped' "$log"; then
    if [[ "${CI:-}" == true ]]; then
      echo "multihost tests were SKIPPED while CI=true: the bed must run in CI" >&2
      grep -m1 'MULTIHOST SKIPPED' "$log" >&2 || true
      return 1
    fi
    echo "WARNING: multihost tests were skipped (see $log)" >&2
  fi
}
stage "test release (multi-host bed, network namespaces)" multihost

# tests/consumer against the installed package: `consumer` embeds nodes, admin and client in one
# process; `client_only` links only the client and admin API and must not contain RocksDB. RocksDB
# links statically (Debian's RocksDBConfig names librocksdb.a), so ldd cannot tell: look for its
# symbols, and in `consumer` too, so a check that could never fail is noticed.
consume_installed() {
  local prefix="$ROOT/build-release/_install" consumer="$ROOT/build-release/_consumer"
  rm -rf "$prefix" "$consumer"
  cmake --install "$ROOT/build-release" --prefix "$prefix" >/dev/null &&
    cmake -S "$ROOT/tests/consumer" -B "$consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null &&
    cmake --build "$consumer" -j "$JOBS" >/dev/null && "$consumer/consumer" &&
    "$consumer/client_only" || return 1
  # The client component alone, with RocksDB made unfindable: what a client-only app sees.
  cmake -S "$ROOT/tests/consumer/client_only" -B "$consumer/client_component" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_DISABLE_FIND_PACKAGE_RocksDB=ON >/dev/null &&
    cmake --build "$consumer/client_component" -j "$JOBS" >/dev/null &&
    "$consumer/client_component/client_only" || {
    echo "find_package(shardkv COMPONENTS client) failed without RocksDB" >&2
    return 1
  }
  # grep -c reads all of nm's output: grep -q could exit first and fail the pipe (pipefail).
  local in_consumer in_client_only
  in_consumer=$(nm -C "$consumer/consumer" | grep -c 'rocksdb::' || true)
  in_client_only=$( (nm -C "$consumer/client_only"; ldd "$consumer/client_only") |
    grep -c 'rocksdb' || true)
  if [[ "$in_consumer" == 0 ]]; then
    echo "no RocksDB symbols in consumer: the client_only check would prove nothing" >&2
    return 1
  fi
  if [[ "$in_client_only" != 0 ]]; then
    echo "client_only links RocksDB, but the client and admin API must not need it" >&2
    return 1
  fi
  echo "client_only links no RocksDB (nm, ldd)"
}
stage "install + find_package(shardkv) from an application" consume_installed

# The background build's outcome; its time is its own (it began after the release build).
wait_asan_build() {
  wait "$ASAN_PID" || true
  local rc=1 secs=0
  read -r rc secs <"$ROOT/build-asan.build.rc" || true
  ASAN_PID=""
  echo "asan+ubsan build: exit ${rc} after ${secs} s in the background"
  if [[ "$rc" != 0 ]]; then
    tail -n 60 "$ROOT/build-asan.build.log"
    return 1
  fi
}

if [[ "${SHARDKV_SKIP_ASAN:-0}" != 1 ]]; then
  stage "build asan+ubsan (waiting for the background build)" wait_asan_build
  stage "test asan+ubsan (unit + in-process)" env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$ROOT/build-asan" --output-on-failure -j "$JOBS" --timeout 900 \
    -LE 'multiprocess|multihost|bench'
fi

# ThreadSanitizer over the unit and in-process tests: the races the lock annotations cannot see
# (atomics, callbacks handed across threads, the event loops). A third full build with its own
# flags: about as long as the ASan stage, more than CI's budget allows beside the other two
# (bench/README.md "CI time"), so it runs with SHARDKV_LONG=1 (or SHARDKV_TSAN=1). RocksDB,
# libraft and Cap'n Proto come from Debian uninstrumented: TSan sees their locks, not their
# memory accesses.
# The TSan stage's tests. The test waits stretch under TSan by testing::TimeScale()
# (tests/testing/time_scale.h), but a few tests are bound by deadlines inside the node that no
# NodeOptions field lets a test stretch: a replica write's 1 s (CoordinatorOptions), the
# consensus lease's 2.5 s and its 1 s election timeout (MapConsensusOptions), an RPC client's 1 s
# ping after a timed-out call. Under TSan's 5-15x slowdown those expire, and the test fails on a
# quorum, "fenced" or unreachable error, not on a race report. They run in the release and
# ASan+UBSan stages; here they are left out by name, loudly, and a name that no longer matches
# a test fails the stage. (CTest names, not a Catch tag: one of them is in a file that cannot
# take one now.) A test-only NodeOptions timing factor would let them back in.
TSAN_LEFT_OUT=(
  # The coordinator's replica batch to a live node outlasts 1 s: write quorum not reached.
  'replication_tests:batch writes: a replica down misses its batch and gets hints'
  # A node counts a client-visible error (replica deadline or fence) while the change streams.
  'rebalance_tests:rebalance: scale-out 3->4 and scale-in 4->3 under the history checker'
  # The surviving nodes elect slower than the 2.5 s lease: clients see "fenced" (2 runs of 3).
  'replication_tests:cluster: history holds while nodes stop and restart'
  # The leader misses the RPC client's 1 s ping while it plans: "unreachable" (1 run of 2).
  'rebalance_tests:params change: RF 1 -> 3 streams the new copies, 3 -> 2 drops the surplus ones'
)
tsan_tests() {
  local dir="$ROOT/build-tsan" name regex=""
  echo "==> TSAN STAGE LEAVES OUT ${#TSAN_LEFT_OUT[@]} TESTS (node-internal deadlines; they run in the" \
    "release and ASan stages, see tools/check.sh):" >&2
  for name in "${TSAN_LEFT_OUT[@]}"; do
    echo "      - $name" >&2
    # CTest's -R/-E take a regex: escape its metacharacters so each name matches only itself.
    name=$(sed 's/[][\.*^$+?(){}|]/\\&/g' <<<"$name")
    if ! ctest --test-dir "$dir" -N -R "^${name}\$" | grep -q 'Total Tests: 1$'; then
      echo "TSan stage: no test is named '$name' any more: update TSAN_LEFT_OUT" >&2
      return 1
    fi
    regex+="${regex:+|}${name}"
  done
  env TSAN_OPTIONS="halt_on_error=1:detect_deadlocks=0:suppressions=$ROOT/tools/tsan.supp" \
    ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --timeout 900 \
    -LE 'multiprocess|multihost|bench' -E "^(${regex})\$"
}

if [[ "${SHARDKV_LONG:-0}" == 1 || "${SHARDKV_TSAN:-0}" == 1 ]]; then
  stage "configure tsan" configure "$ROOT/build-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSHARDKV_SANITIZE_THREAD=ON -DSHARDKV_BUILD_BENCH=OFF -DSHARDKV_BUILD_PROCESS_TESTS=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1"
  stage "build tsan" build "$ROOT/build-tsan"
  stage "test tsan (unit + in-process)" tsan_tests
fi

echo "==> all stages passed in $(($(date +%s) - START)) s"
