#include "resp/resp_writer.h"

#include <charconv>
#include <cmath>

namespace shardkv::resp {
namespace {

std::string_view ToChars(int64_t value, char (&buf)[24]) {
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  (void)ec;  // 24 bytes always hold an int64_t
  return std::string_view(buf, static_cast<size_t>(end - buf));
}

}  // namespace

std::string FormatDouble(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  if (value == 0) return std::signbit(value) ? "-0" : "0";
  // redis's double2ll range: integral values strictly inside (-2^52, 2^52) print as integers.
  constexpr double kLimit = 4503599627370496.0;  // 2^52
  if (value > -kLimit && value < kLimit && value == std::trunc(value)) {
    char buf[24];
    return std::string(ToChars(static_cast<int64_t>(value), buf));
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  (void)ec;  // the shortest form of a double is at most 24 bytes
  return std::string(buf, static_cast<size_t>(end - buf));
}

void RespWriter::Line(char type, std::string_view body) {
  out_->push_back(type);
  const size_t start = out_->size();
  out_->append(body);
  for (size_t i = start; i < out_->size(); ++i) {
    if ((*out_)[i] == '\r' || (*out_)[i] == '\n') (*out_)[i] = ' ';
  }
  out_->append("\r\n");
}

void RespWriter::Length(char type, int64_t n) {
  char buf[24];
  out_->push_back(type);
  out_->append(ToChars(n, buf));
  out_->append("\r\n");
}

void RespWriter::SimpleString(std::string_view s) { Line('+', s); }

void RespWriter::Error(std::string_view message) {
  if (!message.empty() && message[0] == '-') {
    Line('-', message.substr(1));
    return;
  }
  std::string body = "ERR ";
  body.append(message);
  Line('-', body);
}

void RespWriter::Integer(int64_t value) { Length(':', value); }

void RespWriter::Bulk(std::string_view bytes) {
  Length('$', static_cast<int64_t>(bytes.size()));
  out_->append(bytes);
  out_->append("\r\n");
}

void RespWriter::Null() { out_->append(resp3() ? "_\r\n" : "$-1\r\n"); }

void RespWriter::NullArray() { out_->append(resp3() ? "_\r\n" : "*-1\r\n"); }

void RespWriter::ArrayHeader(size_t count) { Length('*', static_cast<int64_t>(count)); }

void RespWriter::MapHeader(size_t pairs) {
  if (resp3()) {
    Length('%', static_cast<int64_t>(pairs));
  } else {
    Length('*', static_cast<int64_t>(pairs * 2));
  }
}

void RespWriter::SetHeader(size_t count) {
  Length(resp3() ? '~' : '*', static_cast<int64_t>(count));
}

void RespWriter::Double(double value) {
  const std::string text = FormatDouble(value);
  if (resp3()) {
    Line(',', text);
  } else {
    Bulk(text);
  }
}

void RespWriter::Boolean(bool value) {
  if (resp3()) {
    out_->append(value ? "#t\r\n" : "#f\r\n");
  } else {
    out_->append(value ? ":1\r\n" : ":0\r\n");
  }
}

void RespWriter::Verbatim(std::string_view text, std::string_view format) {
  if (!resp3()) {
    Bulk(text);
    return;
  }
  if (format.size() != 3) format = "txt";
  Length('=', static_cast<int64_t>(text.size() + 4));
  out_->append(format);
  out_->push_back(':');
  out_->append(text);
  out_->append("\r\n");
}

}  // namespace shardkv::resp
