#include "net/messages.h"

namespace shardkv::net {

std::string_view OpName(const RequestBody& body) {
  static constexpr std::string_view kNames[] = {"ping",        "get",           "put",
                                                "delete",      "multiGet",      "multiPut",
                                                "stats",       "getClusterMap", "replicaWrite",
                                                "replicaRead", "installMap",    "streamScan",
                                                "streamRange", "countRanges",   "admin",
                                                "expire",      "scan",          "replicaScan",
                                                "raftMessage", "antiEntropy",   "replicaWriteBatch",
                                                "incr",        "hashWrite",     "hashRead",
                                                "setWrite",    "setRead"};
  static_assert(std::size(kNames) == std::variant_size_v<RequestBody>);
  return body.valueless_by_exception() ? "invalid" : kNames[body.index()];
}

std::string_view OpName(const ResponseBody& body) {
  static constexpr std::string_view kNames[] = {
      "error",       "ping",       "get",         "put",           "delete",
      "multiGet",    "multiPut",   "stats",       "getClusterMap", "replicaWrite",
      "replicaRead", "installMap", "streamScan",  "streamRange",   "countRanges",
      "admin",       "scan",       "replicaScan", "antiEntropy",   "replicaWriteBatch",
      "incr",        "hashWrite",  "hashRead",    "setWrite",      "setRead"};
  static_assert(std::size(kNames) == std::variant_size_v<ResponseBody>);
  return body.valueless_by_exception() ? "invalid" : kNames[body.index()];
}

std::string_view ChangeCommandName(const ChangeCommand& command) {
  static constexpr std::string_view kNames[] = {"plan",   "begin",  "status",
                                                "cancel", "resume", "throttle"};
  static_assert(std::size(kNames) == std::variant_size_v<ChangeCommand>);
  return command.valueless_by_exception() ? "invalid" : kNames[command.index()];
}

}  // namespace shardkv::net
