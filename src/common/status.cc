#include "shardkv/status.h"

namespace shardkv {

std::string_view Status::CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kNotFound:
      return "not found";
    case Code::kInvalidArgument:
      return "invalid argument";
    case Code::kAlreadyExists:
      return "already exists";
    case Code::kFailedPrecondition:
      return "failed precondition";
    case Code::kCorruption:
      return "corruption";
    case Code::kIOError:
      return "I/O error";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kTimeout:
      return "timeout";
    case Code::kStaleEpoch:
      return "stale epoch";
    case Code::kResourceExhausted:
      return "resource exhausted";
    case Code::kAborted:
      return "aborted";
    case Code::kNotSupported:
      return "not supported";
    case Code::kInternal:
      return "internal error";
    case Code::kUnauthenticated:
      return "unauthenticated";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(CodeName(code_));
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

Status Status::WithContext(std::string_view prefix) const {
  if (ok()) return *this;
  std::string m(prefix);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

}  // namespace shardkv
