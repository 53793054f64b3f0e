// MapStore: the node's current cluster map, persisted in the storage `meta` column family.
//
// Readers take a shared_ptr snapshot (Current()) and keep using it for a whole request, so a map
// swap never changes placement under a request in flight. Install() persists the new map before
// publishing it, so a restart never goes back to an older epoch.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "shardkv/cluster_map.h"
#include "shardkv/status.h"

namespace shardkv::storage {
class Storage;
}  // namespace shardkv::storage

namespace shardkv::cluster {

class MapStore {
 public:
  static constexpr std::string_view kMetaKey = "cluster/map";

  // REQUIRES: storage outlives the MapStore.
  explicit MapStore(storage::Storage* storage) : storage_(storage) {}

  // Loads the persisted map. NotFound if the node has none yet.
  [[nodiscard]] Status Load();
  // Persists and publishes `map`. FailedPrecondition if it belongs to another cluster, or if it
  // is older than the current map; a map with the current epoch but different content is a
  // conflict (Aborted). Installing the identical map again is a no-op.
  [[nodiscard]] Status Install(const ClusterMap& map);
  // Install() of an encoded map a peer's reply carries, `epoch` being the reply's: decoded only
  // if this node is still behind that epoch. Every reply to a request sent under an older epoch
  // carries the map, and decoding each (~0.1 s for a 100,000-vnode ring, on the one I/O thread
  // peer replies are read on) stalled every peer call, pings included. True if it was installed.
  [[nodiscard]] StatusOr<bool> InstallIfNewer(uint64_t epoch, std::string_view encoded);
  // Replaces whatever is there (bootstrap of a standalone node or a new cluster).
  [[nodiscard]] Status Reset(const ClusterMap& map);

  // The current map, or null before Load()/Install().
  std::shared_ptr<const ClusterMap> Current() const;

  // Hooks around every Install()/Reset() that changes the map (the rebalancer's local data
  // rules: drop leftovers before a new change's joint writes can land, drop lost ranges after).
  // `old` is null on a node's first map. A failing before-hook fails the install. Both run under
  // the install lock, so installs are applied one at a time and in order, but not under the lock
  // Current() takes: a hook may take seconds (dropping ~25,000 ring arcs of a 100,000-vnode
  // change), and every request and the consensus thread's sends read Current(). Readers see
  // the old map until the before-hook is done, the new one while the after-hooks run.
  using BeforeHook = std::function<Status(const ClusterMap* old, const ClusterMap& next)>;
  using AfterHook = std::function<void(const ClusterMap* old, const ClusterMap& next)>;
  void SetBeforePublish(BeforeHook hook);
  void AddAfterPublish(AfterHook hook);

 private:
  Status Persist(const ClusterMap& map);
  Status PublishLocked(const ClusterMap& map) REQUIRES(install_mu_);

  storage::Storage* storage_;
  // Serialises Load/Install/Reset and the hooks; held across the hooks.
  common::Mutex install_mu_ ACQUIRED_BEFORE(mu_);
  BeforeHook before_ GUARDED_BY(install_mu_);
  std::vector<AfterHook> after_ GUARDED_BY(install_mu_);
  // Guards only the pointer: held for a copy or a swap, never across a hook.
  mutable common::Mutex mu_;
  std::shared_ptr<const ClusterMap> current_ GUARDED_BY(mu_);
};

}  // namespace shardkv::cluster
