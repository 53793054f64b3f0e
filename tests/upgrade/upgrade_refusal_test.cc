// Upgrade policy, the other side: a data directory or stored map of a version this build does
// not know is refused with a message naming both versions, and left as it was.
#include "upgrade/upgrade_util.h"

using namespace upgrade;
TEST_CASE("upgrade v0.1.0: a data directory with an unknown storage format version is refused",
          "[upgrade]") {
  TempDir dir;
  const std::string root = CopyFixture(dir, "ring");
  const std::string db = DbDir(root, 1);
  // The old release stamped version 1, as decimal ASCII in the meta CF.
  CHECK(RawMetaGet(db, "storage/format_version") == "1");
  const std::string future = std::to_string(storage::kStorageFormatVersion + 1);
  RawMetaPut(db, "storage/format_version", future);

  storage::StorageOptions so;
  so.create_if_missing = false;
  so.node_id = 1;
  auto opened = storage::Storage::Open(db, so);
  REQUIRE_FALSE(opened.ok());
  const Status& s = opened.status();
  INFO(s.ToString());
  CHECK(s.code() == Status::Code::kFailedPrecondition);
  CHECK(Contains(s.message(), db));
  CHECK(Contains(s.message(), "has storage format version " + future));
  CHECK(Contains(s.message(), "refusing to open it"));

  // Node::Start refuses it too, as a member and as a node without a cluster id, and names the
  // node's data directory.
  for (uint64_t cluster_id : {kRingClusterId, uint64_t{0}}) {
    INFO("cluster_id " << cluster_id);
    auto node = Node::Start(FixtureNodeOptions(root, 1, cluster_id));
    REQUIRE_FALSE(node.ok());
    INFO(node.status().ToString());
    CHECK(node.status().code() == Status::Code::kFailedPrecondition);
    CHECK(Contains(node.status().message(), NodeDir(root, 1)));
    CHECK(Contains(node.status().message(), "has storage format version " + future));
  }
  // The refusals left the marker alone (nothing re-stamped the directory).
  CHECK(RawMetaGet(db, "storage/format_version") == future);

  // Control: an untouched node of the same fixture opens.
  auto other = OpenStore(DbDir(root, 2), 2);
  CHECK(other->Close().ok());
}

TEST_CASE("upgrade v0.1.0: a stored cluster map with an unknown format version is refused",
          "[upgrade]") {
  TempDir dir;
  const std::string root = CopyFixture(dir, "ring");
  const std::string future = std::to_string(ClusterMap::kFormatVersion + 1);
  {
    auto store = OpenStore(DbDir(root, 1), 1);
    auto bytes = store->GetAux(storage::AuxColumn::kMeta, cluster::MapStore::kMetaKey);
    REQUIRE(bytes.ok());
    std::string map = *bytes;
    // A single-segment Cap'n Proto message as the old release wrote it: segment table (8 bytes),
    // the root struct pointer with offset 0, then the root's data section, whose first 4 bytes
    // are formatVersion (field @0, UInt32, little-endian).
    REQUIRE(map.size() >= 24);
    uint32_t segments_minus_one = 0;
    uint32_t root_pointer_low = 0;
    uint32_t version = 0;
    std::memcpy(&segments_minus_one, map.data(), 4);
    std::memcpy(&root_pointer_low, map.data() + 8, 4);
    std::memcpy(&version, map.data() + 16, 4);
    REQUIRE(segments_minus_one == 0);
    REQUIRE(root_pointer_low == 0);  // struct pointer, offset 0: the data section follows
    REQUIRE(version == 1);
    const uint32_t bumped = ClusterMap::kFormatVersion + 1;
    std::memcpy(map.data() + 16, &bumped, 4);
    REQUIRE(store->PutAux(storage::AuxColumn::kMeta, cluster::MapStore::kMetaKey, map).ok());

    cluster::MapStore maps(store.get());
    Status loaded = maps.Load();
    INFO(loaded.ToString());
    CHECK(loaded.code() == Status::Code::kFailedPrecondition);
    CHECK(Contains(loaded.message(), "cluster map format version " + future + " is unknown"));
    CHECK(maps.Current() == nullptr);
    REQUIRE(store->Close().ok());
  }
  // A node refuses to start on it rather than bootstrapping a fresh map over it, whether it
  // knows its cluster id or not.
  for (uint64_t cluster_id : {kRingClusterId, uint64_t{0}}) {
    INFO("cluster_id " << cluster_id);
    auto node = Node::Start(FixtureNodeOptions(root, 1, cluster_id));
    REQUIRE_FALSE(node.ok());
    INFO(node.status().ToString());
    CHECK(node.status().code() == Status::Code::kFailedPrecondition);
    CHECK(Contains(node.status().message(), "loading the cluster map"));
    CHECK(Contains(node.status().message(), "cluster map format version " + future));
  }
  // The bumped map is still there (not replaced by a bootstrap map).
  auto store = OpenStore(DbDir(root, 1), 1);
  cluster::MapStore maps(store.get());
  CHECK(maps.Load().code() == Status::Code::kFailedPrecondition);
  CHECK(store->Close().ok());
}
