#include "progress.h"

#include <cstdio>

namespace shardkv::cli {

ProgressBar::ProgressBar(std::string label, uint64_t total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

double ProgressBar::ElapsedSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProgressBar::Update(uint64_t done, uint64_t errors) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  Draw(done, errors);
}

void ProgressBar::Finish(uint64_t done, uint64_t errors) {
  if (!enabled_) return;
  Draw(done, errors);
  std::fputc('\n', stderr);
}

void ProgressBar::Draw(uint64_t done, uint64_t errors) {
  constexpr int kWidth = 30;
  const double fraction = total_ ? static_cast<double>(done) / total_ : 1.0;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(filled, '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  const double elapsed = ElapsedSeconds();
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const double eta = rate > 0 ? (total_ - done) / rate : 0;
  std::fprintf(stderr, "\r%s [%s] %5.1f%% %llu/%llu  %.0f ops/s  ETA %.0fs", label_.c_str(),
               bar.c_str(), fraction * 100, static_cast<unsigned long long>(done),
               static_cast<unsigned long long>(total_), rate, eta);
  if (errors) std::fprintf(stderr, "  errors %llu", static_cast<unsigned long long>(errors));
  std::fputs("\033[K", stderr);  // clear the rest of the line
  std::fflush(stderr);
}

}  // namespace shardkv::cli
