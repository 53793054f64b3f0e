#include "cluster/map_store.h"

#include "storage/storage.h"

namespace shardkv::cluster {

Status MapStore::Load() {
  auto bytes = storage_->GetAux(storage::AuxColumn::kMeta, kMetaKey);
  if (!bytes.ok()) return bytes.status();
  auto map = ClusterMap::Decode(*bytes);
  if (!map.ok()) return map.status();
  common::MutexLock lock(&mu_);
  current_ = std::make_shared<const ClusterMap>(std::move(map).value());
  return Status::OK();
}

Status MapStore::Persist(const ClusterMap& map) {
  return storage_->PutAux(storage::AuxColumn::kMeta, kMetaKey, map.Encode());
}

Status MapStore::Install(const ClusterMap& map) {
  common::MutexLock lock(&mu_);
  if (current_) {
    if (map.cluster_id() != current_->cluster_id()) {
      return Status::FailedPrecondition("map of cluster " + std::to_string(map.cluster_id()) +
                                        " offered to a node of cluster " +
                                        std::to_string(current_->cluster_id()));
    }
    if (map.epoch() < current_->epoch()) {
      return Status::FailedPrecondition("map epoch " + std::to_string(map.epoch()) +
                                        " is older than the current epoch " +
                                        std::to_string(current_->epoch()));
    }
    if (map.epoch() == current_->epoch()) {
      if (map.ContentHash() == current_->ContentHash()) return Status::OK();
      return Status::Aborted("two different maps with epoch " + std::to_string(map.epoch()));
    }
  }
  return PublishLocked(map);
}

Status MapStore::Reset(const ClusterMap& map) {
  common::MutexLock lock(&mu_);
  if (current_ && current_->ContentHash() == map.ContentHash()) return Status::OK();
  return PublishLocked(map);
}

Status MapStore::PublishLocked(const ClusterMap& map) {
  std::shared_ptr<const ClusterMap> old = current_;
  if (before_) SHARDKV_RETURN_IF_ERROR(before_(old.get(), map));
  SHARDKV_RETURN_IF_ERROR(Persist(map));
  current_ = std::make_shared<const ClusterMap>(map);
  for (const AfterHook& hook : after_) hook(old.get(), *current_);
  return Status::OK();
}

void MapStore::SetBeforePublish(BeforeHook hook) {
  common::MutexLock lock(&mu_);
  before_ = std::move(hook);
}

void MapStore::AddAfterPublish(AfterHook hook) {
  common::MutexLock lock(&mu_);
  after_.push_back(std::move(hook));
}

std::shared_ptr<const ClusterMap> MapStore::Current() const {
  common::MutexLock lock(&mu_);
  return current_;
}

}  // namespace shardkv::cluster
