// The live display of `rebalance watch`: bars per stream redrawn in place on a terminal
// (stderr), one plain line per poll otherwise (stdout), with smoothed rates and ETAs.
//
// Thread-safety: not shared between threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "shardkv/change.h"

namespace shardkv::cli {

// An exponentially smoothed rate of a counter that only grows.
class Rate {
 public:
  void Add(double value, std::chrono::steady_clock::time_point now);
  double per_s() const { return rate_; }

 private:
  bool have_ = false, seeded_ = false;
  double last_ = 0, rate_ = 0;
  std::chrono::steady_clock::time_point at_;
};

class WatchView {
 public:
  explicit WatchView(bool tty) : tty_(tty) {}

  void Show(const ChangeReport& r, const std::string& note);
  // A line about polling itself (no node answered) while there is nothing new to draw. Without
  // a terminal, a repeated note is printed again only every 10 s.
  void Note(const std::string& note);
  // Leaves the last drawing on screen; later output starts below it.
  void Close() { drawn_ = 0; }

  uint64_t max_copies() const { return live_.copies_done; }
  uint64_t max_bytes() const { return live_.bytes_done; }

 private:
  void Draw(const std::vector<std::string>& lines);

  bool tty_;
  size_t drawn_ = 0;
  std::string last_note_;
  std::chrono::steady_clock::time_point last_note_at_;
  ChangeReport live_;  // the last report with live progress
  Rate overall_, copies_rate_;
  std::map<std::pair<uint32_t, uint32_t>, Rate> rates_;
};

}  // namespace shardkv::cli
