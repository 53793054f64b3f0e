#include "shardkv/options.h"

namespace shardkv {

StatusOr<Consistency> ParseConsistency(std::string_view name) {
  if (name == "one") return Consistency::kOne;
  if (name == "quorum") return Consistency::kQuorum;
  if (name == "all") return Consistency::kAll;
  if (name == "default") return Consistency::kDefault;
  return Status::InvalidArgument("unknown consistency '" + std::string(name) +
                                 "' (expected one, quorum, all)");
}

std::string_view ConsistencyName(Consistency c) {
  switch (c) {
    case Consistency::kDefault:
      return "default";
    case Consistency::kOne:
      return "one";
    case Consistency::kQuorum:
      return "quorum";
    case Consistency::kAll:
      return "all";
  }
  return "?";
}

}  // namespace shardkv
