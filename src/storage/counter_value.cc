#include "storage/counter_value.h"

#include <limits>

namespace shardkv::storage {

std::optional<int64_t> ParseCounterInteger(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  const bool negative = text[0] == '-';
  std::string_view digits = negative ? text.substr(1) : text;
  if (digits.empty() || (digits[0] == '0' && (digits.size() > 1 || negative))) {
    return std::nullopt;
  }
  uint64_t magnitude = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto d = static_cast<uint64_t>(c - '0');
    if (magnitude > (std::numeric_limits<uint64_t>::max() - d) / 10) return std::nullopt;
    magnitude = magnitude * 10 + d;
  }
  const auto max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (!negative) {
    if (magnitude > max) return std::nullopt;
    return static_cast<int64_t>(magnitude);
  }
  if (magnitude > max + 1) return std::nullopt;
  return magnitude == max + 1 ? std::numeric_limits<int64_t>::min()
                              : -static_cast<int64_t>(magnitude);
}

std::optional<int64_t> CounterBase(const Envelope& e) {
  if (!e.has_value()) return 0;
  return ParseCounterInteger(e.value);
}

std::optional<int64_t> CounterValue(const Envelope& e) {
  std::optional<int64_t> base = CounterBase(e);
  if (!base) return std::nullopt;
  // Totals are unsigned and may each pass INT64_MAX over a long life; their difference is what
  // counts, so sum in 128 bits and check the result once.
  __int128 sum = *base;
  for (const CounterEntry& c : e.counter) {
    if (!e.Counts(c)) continue;
    sum += static_cast<__int128>(c.inc);
    sum -= static_cast<__int128>(c.dec);
  }
  if (sum > std::numeric_limits<int64_t>::max() || sum < std::numeric_limits<int64_t>::min()) {
    return std::nullopt;
  }
  return static_cast<int64_t>(sum);
}

std::string ReadValue(Envelope&& e, uint64_t now_ms) {
  if (e.ExpiredAt(now_ms)) {
    // Live past its expiry only through counts from nothing begun after it: the expired register
    // reads as nothing under them.
    __int128 sum = 0;
    for (const CounterEntry& c : e.counter) {
      if (!e.CountsAt(c, now_ms)) continue;
      sum += static_cast<__int128>(c.inc);
      sum -= static_cast<__int128>(c.dec);
    }
    if (sum <= std::numeric_limits<int64_t>::max() && sum >= std::numeric_limits<int64_t>::min()) {
      return std::to_string(static_cast<int64_t>(sum));
    }
    return "0";
  }
  if (e.counter_active()) {
    if (std::optional<int64_t> v = CounterValue(e)) return std::to_string(*v);
  }
  return std::move(e.value);
}

Envelope CounterWrite(const CounterEntry& entry, std::optional<Version> death) {
  Envelope e;
  if (death) {
    e = Envelope::Plain(*death, true, "");
  } else {
    e.value_absent = true;
    e.SetExpiry(Version{}, 0);
  }
  e.counter.push_back(entry);
  return e;
}

}  // namespace shardkv::storage
