// What the in-process and the multi-process test harnesses share: a shardkv::Admin for a seed
// list, waiting for a membership change with a deadline, polling, a look at one node (its map,
// what it holds in its own store), node addresses from port files, and the key counts of the
// heavy tests. Clusters are formed and changes driven through Admin (include/shardkv/admin.h);
// raw wire requests stay only where a test looks at one node's own state.
//
// No Catch2 here: failures come back as Status values, which the tests REQUIRE and print.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/admin.h"
#include "shardkv/change.h"
#include "shardkv/cluster_map.h"
#include "shardkv/status.h"

namespace shardkv::testing {

// SHARDKV_TEST_KEYS, or `fallback` when it is unset or empty.
int TestKeys(int fallback);
// SHARDKV_LONG=1: long scenarios run at full length (CI runs them short; tools/check.sh).
bool LongTests();

// Polls `done` every `every` until it holds or `limit` passes; returns whether it held.
bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds limit,
               std::chrono::milliseconds every = std::chrono::milliseconds(100));

// An Admin of `seeds`, expecting cluster `cluster_id` (0: the first answering node's). Plan and
// begin may take `plan_timeout` (they count every key). Throws std::invalid_argument for a seed
// that is no host:port: a mistake of the test itself.
std::unique_ptr<Admin> AdminFor(std::vector<std::string> seeds, uint64_t cluster_id = 0,
                                std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                std::chrono::milliseconds plan_timeout = std::chrono::seconds(60));

// Polls admin.ChangeStatus(preferred) until `until` holds for its report or `limit` passes.
// Returns the report that held; Timeout with the last state (or the last error) otherwise.
StatusOr<ChangeReport> WaitChange(Admin& admin,
                                  const std::function<bool(const ChangeReport&)>& until,
                                  std::chrono::milliseconds limit,
                                  const std::string& preferred = "");
// Until the change is in `state`. A change that ended in another state fails at once
// (FailedPrecondition naming it and its error): it would never get there.
StatusOr<ChangeReport> WaitChange(Admin& admin, ChangeState state, std::chrono::milliseconds limit);
// Until the change ended (done, failed or cancelled).
StatusOr<ChangeReport> WaitChangeEnded(Admin& admin, std::chrono::milliseconds limit);

// "kind node N: state (error)", for messages.
std::string DescribeChange(const ChangeReport& report);

// The map `address` holds, whatever its cluster (Admin::Probe); nullopt when it does not answer
// within `timeout`.
std::optional<ClusterMap> NodeMap(const std::string& address,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(2));

// The id of the cluster whose map `address` holds (0 when it does not answer).
uint64_t ClusterIdOf(const std::string& address);

// How many of `keys` node `address` holds live in its own store: a replica read, no
// coordination, the one raw wire request here (no API reads one replica on purpose).
int LocallyHeld(const std::string& address, const ClusterMap& map,
                const std::vector<std::string>& keys);

// "127.0.0.1:PORT" from the port file a node writes into its data directory ("" while there is
// none), and the same polled until it is there or `limit` passes.
std::string AddressFromPortFile(const std::string& data_dir);
std::string WaitForPortFile(const std::string& data_dir, std::chrono::milliseconds limit);

// The cluster_id= value of DIR/cluster.conf, the cluster a `shardkv --dir DIR` directory holds
// ("" when there is none).
std::string ClusterIdInDir(const std::string& dir);

// The addresses of the nodes of a `shardkv --dir DIR` directory (DIR/node-ID/port), by id.
std::vector<std::string> NodeAddressesInDir(const std::string& dir);
// An Admin of the nodes of DIR, expecting the cluster of DIR/cluster.conf.
std::unique_ptr<Admin> AdminForDir(const std::string& dir);

// Forms the unformed node `id` at `address` into a cluster of one, RF=W=Q=1, with `cluster_id`
// (0: a random one), through Admin::FormCluster: the usable single node a fresh node was by
// itself before unformed nodes (design.md "Unformed nodes").
Status FormAlone(const std::string& address, uint32_t id = 1, uint64_t cluster_id = 0);

}  // namespace shardkv::testing
