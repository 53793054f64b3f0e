// tree-build-bench: the per-key cost of an anti-entropy hash tree (storage/range_hash_tree.h)
// against a plain scan of the same data, on one database (bench/README.md "Anti-entropy").
//
//   tree-build-bench [--keys N] [--value-bytes B] [--ranges R] [--repeat K] [--db DIR]
//
// Writes N keys of B bytes (as `shardkv load` names them) into a fresh database in a temporary
// directory (or opens DIR, already loaded), flushes and compacts it, then times, K times each,
// alternately: Storage::Scan of every entry (tombstones included, as the tree reads them), and
// RangeHashTree::Build of the same entries cut into R equal token ranges (the ring's ranges).
// Prints CPU and wall time per pass and per key.
#include <unistd.h>

#include <charconv>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardkv/hash.h"
#include "storage/range_hash_tree.h"
#include "storage/storage.h"

namespace {

using shardkv::Status;
using shardkv::TokenRange;
using shardkv::storage::RangeHashTree;
using shardkv::storage::Storage;

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double WallSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int Fail(const std::string& what) {
  std::cerr << "tree-build-bench: " << what << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t keys = 300000;
  size_t value_bytes = 100;
  uint32_t ranges = 100;
  int repeat = 3;
  std::string db;
  // A positive decimal number, or nullopt.
  const auto number = [](std::string_view text) -> std::optional<uint64_t> {
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v == 0) return std::nullopt;
    return v;
  };
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Fail(flag + " needs a value");
    const std::string value = argv[i + 1];
    if (flag == "--db") {
      db = value;
      continue;
    }
    const std::optional<uint64_t> n = number(value);
    if (!n) return Fail(flag + " needs a positive number, not '" + value + "'");
    if (flag == "--keys") {
      keys = *n;
    } else if (flag == "--value-bytes") {
      value_bytes = static_cast<size_t>(*n);
    } else if (flag == "--ranges" && *n <= UINT32_MAX) {
      ranges = static_cast<uint32_t>(*n);
    } else if (flag == "--repeat" && *n <= 1000) {
      repeat = static_cast<int>(*n);
    } else {
      return Fail("unknown flag or value out of range: " + flag + " " + value);
    }
  }
  const bool own_db = db.empty();
  if (own_db) {
    db = (std::filesystem::temp_directory_path() /
          ("tree-build-bench-" + std::to_string(::getpid())))
             .string();
  }
  auto opened = Storage::Open(db, shardkv::storage::StorageOptions{});
  if (!opened.ok()) return Fail(opened.status().ToString());
  Storage& s = **opened;
  if (own_db) {
    const std::string value(value_bytes, 'v');
    std::vector<shardkv::storage::RangeEntry> batch;
    for (uint64_t i = 0; i < keys; ++i) {
      std::string key = "key:" + std::to_string(i);
      const uint64_t token = shardkv::hash::Xxh3(key);
      auto w = s.Put(token, key, value);
      if (!w.ok()) return Fail(w.status().ToString());
    }
    // On disk, in sorted files, as a loaded node's data mostly is.
    if (Status f = s.Flush(); !f.ok()) return Fail(f.ToString());
  }
  const std::vector<TokenRange> parts = RangeHashTree::SplitSpan({0, UINT64_MAX}, ranges);
  for (int round = 0; round < repeat; ++round) {
    // A plain scan: every entry materialized, as Storage::Scan returns it.
    double cpu = CpuSeconds(), wall = WallSeconds();
    uint64_t scanned = 0;
    for (const TokenRange& r : parts) {
      shardkv::storage::ScanOptions o;
      o.max_entries = 4096;
      for (;;) {
        auto b = s.Scan(r, o);
        if (!b.ok()) return Fail(b.status().ToString());
        scanned += b->entries.size();
        if (b->done || b->entries.empty()) break;
        o.cursor = std::move(b->cursor);
      }
    }
    const double scan_cpu = CpuSeconds() - cpu, scan_wall = WallSeconds() - wall;
    cpu = CpuSeconds();
    wall = WallSeconds();
    uint64_t hashed = 0, x = 0;
    for (const TokenRange& r : parts) {
      auto t = RangeHashTree::Build(&s, r);
      if (!t.ok()) return Fail(t.status().ToString());
      hashed += t->size();
      x ^= t->Root().hash;
    }
    const double tree_cpu = CpuSeconds() - cpu, tree_wall = WallSeconds() - wall;
    std::cout << "round " << round << ": scan " << scanned << " entries " << scan_cpu << " s CPU ("
              << scan_wall << " s wall, " << scan_cpu * 1e9 / scanned << " ns/key); trees "
              << hashed << " entries " << tree_cpu << " s CPU (" << tree_wall << " s wall, "
              << tree_cpu * 1e9 / hashed << " ns/key; root xor " << x << ")\n";
  }
  if (!s.Close().ok()) return Fail("close failed");
  if (own_db) std::filesystem::remove_all(db);
  return 0;
}
