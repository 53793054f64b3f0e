// How much slower than a release build this test binary runs, for the deadlines of tests that
// wait on real time: ThreadSanitizer slows the in-process nodes 5-15x (bench/README.md "CI
// time"), and a wait sized for a release build then fails on its deadline, not on what it checks.
// Header-only, so the test binaries that do not link shardkv_testing (consensus) use it too.
//
// Only waits, leases and timeouts are scaled, never what a test asserts about them: a release
// build (factor 1) checks exactly what it did before.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>

namespace shardkv::testing {

// ThreadSanitizer's own figure is 5-15x; deadlines already carry slack for a loaded machine, so
// a factor at the low end was enough in the check.sh TSan stage.
#if defined(__SANITIZE_THREAD__)
inline constexpr double kSanitizerTimeScale = 5.0;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr double kSanitizerTimeScale = 5.0;
#else
inline constexpr double kSanitizerTimeScale = 1.0;
#endif
#else
inline constexpr double kSanitizerTimeScale = 1.0;
#endif

// SHARDKV_TEST_TIME_SCALE (a number >= 1; a slow machine may set it for any build), else
// kSanitizerTimeScale. Read once.
inline double TimeScale() {
  static const double scale = [] {
    const char* env = std::getenv("SHARDKV_TEST_TIME_SCALE");
    if (env != nullptr && *env != '\0') {
      const double v = std::strtod(env, nullptr);
      if (v >= 1.0 && v <= 100.0) return v;
    }
    return kSanitizerTimeScale;
  }();
  return scale;
}

// `d` stretched by TimeScale(): a deadline or a lease of a test.
template <class Rep, class Period>
std::chrono::milliseconds Scaled(std::chrono::duration<Rep, Period> d) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  return std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(ms) * TimeScale()));
}

// The same for a count of milliseconds held in an integer option (NodeOptions, ClientOptions).
template <class T>
T ScaledMs(T ms) {
  return static_cast<T>(static_cast<double>(ms) * TimeScale());
}

}  // namespace shardkv::testing
