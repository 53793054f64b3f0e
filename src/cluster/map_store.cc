#include "cluster/map_store.h"

#include "storage/storage.h"

namespace shardkv::cluster {

Status MapStore::Load() {
  auto bytes = storage_->GetAux(storage::AuxColumn::kMeta, kMetaKey);
  if (!bytes.ok()) return bytes.status();
  auto map = ClusterMap::Decode(*bytes);
  if (!map.ok()) return map.status();
  common::MutexLock install(&install_mu_);
  common::MutexLock lock(&mu_);
  current_ = std::make_shared<const ClusterMap>(std::move(map).value());
  return Status::OK();
}

Status MapStore::Persist(const ClusterMap& map) {
  return storage_->PutAux(storage::AuxColumn::kMeta, kMetaKey, map.Encode());
}

Status MapStore::Install(const ClusterMap& map) {
  common::MutexLock install(&install_mu_);
  // Only installs change current_, and they hold install_mu_: this copy stays current.
  const std::shared_ptr<const ClusterMap> current = Current();
  if (current) {
    if (map.cluster_id() != current->cluster_id()) {
      return Status::FailedPrecondition("map of cluster " + std::to_string(map.cluster_id()) +
                                        " offered to a node of cluster " +
                                        std::to_string(current->cluster_id()));
    }
    if (map.epoch() < current->epoch()) {
      return Status::FailedPrecondition("map epoch " + std::to_string(map.epoch()) +
                                        " is older than the current epoch " +
                                        std::to_string(current->epoch()));
    }
    if (map.epoch() == current->epoch()) {
      if (map.ContentHash() == current->ContentHash()) return Status::OK();
      return Status::Aborted("two different maps with epoch " + std::to_string(map.epoch()));
    }
  }
  return PublishLocked(map);
}

StatusOr<bool> MapStore::InstallIfNewer(uint64_t epoch, std::string_view encoded) {
  if (encoded.empty()) return false;
  if (auto current = Current(); current && current->epoch() >= epoch) return false;
  auto map = ClusterMap::Decode(encoded);
  if (!map.ok()) return map.status();
  SHARDKV_RETURN_IF_ERROR(Install(*map));
  return true;
}

Status MapStore::Reset(const ClusterMap& map) {
  common::MutexLock install(&install_mu_);
  const std::shared_ptr<const ClusterMap> current = Current();
  if (current && current->ContentHash() == map.ContentHash()) return Status::OK();
  return PublishLocked(map);
}

Status MapStore::PublishLocked(const ClusterMap& map) {
  const std::shared_ptr<const ClusterMap> old = Current();
  if (before_) SHARDKV_RETURN_IF_ERROR(before_(old.get(), map));
  SHARDKV_RETURN_IF_ERROR(Persist(map));
  auto next = std::make_shared<const ClusterMap>(map);
  {
    common::MutexLock lock(&mu_);
    current_ = next;
  }
  for (const AfterHook& hook : after_) hook(old.get(), *next);
  return Status::OK();
}

void MapStore::SetBeforePublish(BeforeHook hook) {
  common::MutexLock lock(&install_mu_);
  before_ = std::move(hook);
}

void MapStore::AddAfterPublish(AfterHook hook) {
  common::MutexLock lock(&install_mu_);
  after_.push_back(std::move(hook));
}

std::shared_ptr<const ClusterMap> MapStore::Current() const {
  common::MutexLock lock(&mu_);
  return current_;
}

}  // namespace shardkv::cluster
