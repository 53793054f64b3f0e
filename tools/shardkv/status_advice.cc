#include "status_advice.h"

#include "rebuild_check.h"

namespace shardkv::cli {

std::string MismatchAdvice(const std::optional<ClusterMap>& map, uint32_t id, bool ours,
                           const std::set<uint32_t>& serving) {
  if (!ours) {
    return ": another process took its port; stop that process (another cluster's nodes stop "
           "with 'shardkv cluster down --dir THEIR_DIR'), then start the node with 'shardkv "
           "cluster start-node " +
           std::to_string(id) + "'";
  }
  return ": it lost its data and started afresh; " +
         (map ? RebuildAdvice(*map, id, /*running=*/true, serving)
              : std::string("rebuild it once a replica of its ranges answers"));
}

std::string PortOnHost(const std::optional<std::string>& endpoint,
                       const std::string& node_address) {
  if (!endpoint || endpoint->empty()) return "-";
  const size_t colon = endpoint->rfind(':');
  const size_t node_colon = node_address.rfind(':');
  if (colon == std::string::npos || node_colon == std::string::npos ||
      endpoint->compare(0, colon, node_address, 0, node_colon) != 0) {
    return *endpoint;
  }
  return endpoint->substr(colon + 1);
}

}  // namespace shardkv::cli
