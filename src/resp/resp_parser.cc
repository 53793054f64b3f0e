#include "resp/resp_parser.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace shardkv::resp {
namespace {

constexpr char kInvalidMultibulk[] = "Protocol error: invalid multibulk length";
constexpr char kInvalidBulk[] = "Protocol error: invalid bulk length";
constexpr char kTooBigInline[] = "Protocol error: too big inline request";
constexpr char kTooBigMultibulk[] = "Protocol error: too big mbulk count string";
constexpr char kTooBigBulk[] = "Protocol error: too big bulk count string";
constexpr char kUnbalanced[] = "Protocol error: unbalanced quotes in request";
constexpr char kBulkNotTerminated[] = "Protocol error: bulk argument not followed by CRLF";

// redis's string2ll: optional '-', then "0" or a digit 1-9 followed by digits; no '+', no
// blanks, no leading zeros, no overflow.
bool ParseLongLong(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  if (s == "0") {
    *out = 0;
    return true;
  }
  bool negative = false;
  size_t i = 0;
  if (s[0] == '-') {
    negative = true;
    i = 1;
    if (s.size() == 1) return false;
  }
  if (s[i] < '1' || s[i] > '9') return false;
  uint64_t v = 0;
  constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (v > (kMax + 1 - d) / 10) return false;  // v * 10 + d must stay <= 2^63
    v = v * 10 + d;
  }
  if (negative) {
    if (v > kMax + 1) return false;
    *out = v == kMax + 1 ? INT64_MIN : -static_cast<int64_t>(v);
    return true;
  }
  if (v > kMax) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

// C isspace() in the "C" locale, which sdssplitargs uses to skip blanks between words.
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

}  // namespace

bool SplitInlineArgs(std::string_view line, std::vector<std::string>* args) {
  args->clear();
  // sdssplitargs reads a C string: a NUL ends it.
  if (size_t nul = line.find('\0'); nul != std::string_view::npos) line = line.substr(0, nul);
  const size_t n = line.size();
  // at(i) is the byte at i, or NUL past the end, like *(p+k) on the C string.
  auto at = [&](size_t i) { return i < n ? line[i] : '\0'; };
  size_t p = 0;
  while (true) {
    while (p < n && IsSpace(line[p])) ++p;
    if (p >= n) return true;
    std::string current;
    bool in_double = false;
    bool in_single = false;
    bool done = false;
    while (!done) {
      const char c = at(p);
      if (in_double) {
        if (c == '\\' && at(p + 1) == 'x' && IsHex(at(p + 2)) && IsHex(at(p + 3))) {
          current.push_back(static_cast<char>(HexValue(at(p + 2)) * 16 + HexValue(at(p + 3))));
          p += 3;
        } else if (c == '\\' && at(p + 1) != '\0') {
          ++p;
          switch (line[p]) {
            case 'n':
              current.push_back('\n');
              break;
            case 'r':
              current.push_back('\r');
              break;
            case 't':
              current.push_back('\t');
              break;
            case 'b':
              current.push_back('\b');
              break;
            case 'a':
              current.push_back('\a');
              break;
            default:
              current.push_back(line[p]);
              break;
          }
        } else if (c == '"') {
          // The closing quote must be followed by a blank or the end of the line.
          if (at(p + 1) != '\0' && !IsSpace(at(p + 1))) return false;
          done = true;
        } else if (c == '\0') {
          return false;  // unterminated quotes
        } else {
          current.push_back(c);
        }
      } else if (in_single) {
        if (c == '\\' && at(p + 1) == '\'') {
          ++p;
          current.push_back('\'');
        } else if (c == '\'') {
          if (at(p + 1) != '\0' && !IsSpace(at(p + 1))) return false;
          done = true;
        } else if (c == '\0') {
          return false;
        } else {
          current.push_back(c);
        }
      } else {
        switch (c) {
          case ' ':
          case '\n':
          case '\r':
          case '\t':
          case '\0':
            done = true;
            break;
          case '"':
            in_double = true;
            break;
          case '\'':
            in_single = true;
            break;
          default:
            current.push_back(c);
            break;
        }
      }
      if (p < n) ++p;
    }
    args->push_back(std::move(current));
  }
}

RespParser::RespParser(ParserLimits limits) : limits_(limits) {}

void RespParser::Feed(std::string_view bytes) {
  if (poisoned() || bytes.empty()) return;
  Compact();
  buf_.append(bytes.data(), bytes.size());
}

void RespParser::Compact() {
  // Drop consumed bytes once they are the larger part of the buffer, so a long pipelined
  // stream costs no more than what is pending, and each byte moves O(1) times on average.
  if (pos_ == 0) return;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ >= buf_.size() - pos_) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
}

bool RespParser::MidCommand() const {
  return !poisoned() && (multibulk_left_ > 0 || BufferedBytes() > 0);
}

void RespParser::Reset() {
  buf_.clear();
  pos_ = 0;
  scanned_ = 0;
  multibulk_left_ = 0;
  bulk_len_ = -1;
  args_.clear();
  status_ = Status::OK();
}

RespParser::Step RespParser::Fail(std::string message) {
  status_ = Status::InvalidArgument(std::move(message));
  buf_.clear();
  buf_.shrink_to_fit();
  pos_ = 0;
  scanned_ = 0;
  args_.clear();
  multibulk_left_ = 0;
  bulk_len_ = -1;
  return Step::kError;
}

bool RespParser::Next(std::vector<std::string>* args) {
  while (!poisoned()) {
    Step step;
    if (multibulk_left_ > 0) {
      step = ParseMultibulk(args);
    } else if (pos_ >= buf_.size()) {
      return false;
    } else if (buf_[pos_] == '*') {
      step = ParseMultibulk(args);
    } else {
      step = ParseInline(args);
    }
    if (step == Step::kDone) {
      if (!args->empty()) return true;
      continue;  // an empty line or "*0": skipped
    }
    return false;
  }
  return false;
}

RespParser::Step RespParser::ParseInline(std::vector<std::string>* args) {
  const size_t avail = buf_.size() - pos_;
  const char* begin = buf_.data() + pos_;
  const size_t scan = std::min(avail, limits_.max_inline_bytes + 2);
  const void* nl = std::memchr(begin + scanned_, '\n', scan - scanned_);
  if (nl == nullptr) {
    scanned_ = scan;
    // Redis's check: no newline and more than the limit buffered.
    if (avail > limits_.max_inline_bytes) return Fail(kTooBigInline);
    return Step::kNeedMore;
  }
  size_t len = static_cast<const char*>(nl) - begin;
  const size_t consumed = len + 1;
  if (len > 0 && begin[len - 1] == '\r') --len;
  if (len > limits_.max_inline_bytes) return Fail(kTooBigInline);
  if (!SplitInlineArgs(std::string_view(begin, len), args)) return Fail(kUnbalanced);
  pos_ += consumed;
  scanned_ = 0;
  return Step::kDone;
}

RespParser::Step RespParser::FindCountLine(size_t* end, const char* too_big, const char* invalid) {
  const size_t avail = buf_.size() - pos_;
  const char* begin = buf_.data() + pos_;
  const size_t scan = std::min(avail, limits_.max_inline_bytes + 1);
  const void* cr = std::memchr(begin + scanned_, '\r', scan - scanned_);
  if (cr == nullptr) {
    scanned_ = scan;
    if (avail > limits_.max_inline_bytes) return Fail(too_big);
    return Step::kNeedMore;
  }
  const size_t at = pos_ + (static_cast<const char*>(cr) - begin);
  scanned_ = at - pos_;                               // the '\r' is found again next time
  if (at + 1 >= buf_.size()) return Step::kNeedMore;  // the '\n' has not arrived
  if (buf_[at + 1] != '\n') return Fail(invalid);
  *end = at;
  return Step::kDone;
}

RespParser::Step RespParser::ParseMultibulk(std::vector<std::string>* args) {
  if (multibulk_left_ == 0) {
    size_t end = 0;
    Step step = FindCountLine(&end, kTooBigMultibulk, kInvalidMultibulk);
    if (step != Step::kDone) return step;
    int64_t count = 0;
    if (!ParseLongLong(std::string_view(buf_).substr(pos_ + 1, end - pos_ - 1), &count) ||
        count > limits_.max_multibulk_count) {
      return Fail(kInvalidMultibulk);
    }
    pos_ = end + 2;
    scanned_ = 0;
    if (count <= 0) {  // "*0" and "*-1" are empty commands: skipped
      args->clear();
      return Step::kDone;
    }
    multibulk_left_ = count;
    bulk_len_ = -1;
    args_.clear();
    args_.reserve(std::min(static_cast<size_t>(count), kMaxReserveArgs));
  }

  while (multibulk_left_ > 0) {
    if (bulk_len_ < 0) {
      if (pos_ >= buf_.size()) return Step::kNeedMore;
      if (buf_[pos_] != '$') {
        // Redis reports the byte only once the whole line is in; reporting it at once is the
        // same message, earlier.
        return Fail(std::string("Protocol error: expected '$', got '") + buf_[pos_] + "'");
      }
      size_t end = 0;
      Step step = FindCountLine(&end, kTooBigBulk, kInvalidBulk);
      if (step != Step::kDone) return step;
      int64_t len = 0;
      if (!ParseLongLong(std::string_view(buf_).substr(pos_ + 1, end - pos_ - 1), &len) ||
          len < 0 || len > limits_.max_bulk_bytes) {
        return Fail(kInvalidBulk);
      }
      pos_ = end + 2;
      scanned_ = 0;
      bulk_len_ = len;
      // Room for the argument, but never more than a fixed cap before its bytes arrive.
      const size_t want = static_cast<size_t>(len) + 2;
      if (buf_.size() - pos_ < want) {
        Compact();
        buf_.reserve(buf_.size() + std::min(want - (buf_.size() - pos_), kMaxReserveBytes));
      }
    }
    const size_t need = static_cast<size_t>(bulk_len_) + 2;
    if (buf_.size() - pos_ < need) return Step::kNeedMore;
    if (buf_[pos_ + need - 2] != '\r' || buf_[pos_ + need - 1] != '\n') {
      return Fail(kBulkNotTerminated);
    }
    args_.emplace_back(buf_.data() + pos_, static_cast<size_t>(bulk_len_));
    pos_ += need;
    scanned_ = 0;
    bulk_len_ = -1;
    --multibulk_left_;
  }
  *args = std::move(args_);
  args_ = {};
  return Step::kDone;
}

}  // namespace shardkv::resp
