// A one-line progress bar for long commands, drawn on stderr only when it is a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace shardkv::cli {

class ProgressBar {
 public:
  ProgressBar(std::string label, uint64_t total, bool enabled);
  // Redraws if at least 100 ms passed since the last draw (cheap to call often).
  void Update(uint64_t done, uint64_t errors = 0);
  // Draws the final state and ends the line.
  void Finish(uint64_t done, uint64_t errors = 0);
  double ElapsedSeconds() const;

 private:
  void Draw(uint64_t done, uint64_t errors);

  std::string label_;
  uint64_t total_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace shardkv::cli
