// MakePlacement lives apart from placement.cc so that a binary using one algorithm does not
// link all of them.
#include "shardkv/hash_ring.h"
#include "shardkv/jump_hash.h"
#include "shardkv/ketama.h"
#include "shardkv/maglev.h"
#include "shardkv/modulo.h"
#include "shardkv/placement.h"
#include "shardkv/rendezvous.h"

namespace shardkv {
namespace {

template <typename T>
StatusOr<std::unique_ptr<Placement>> Upcast(StatusOr<std::unique_ptr<T>> built) {
  if (!built.ok()) return built.status();
  return std::unique_ptr<Placement>(std::move(built).value());
}

}  // namespace

StatusOr<std::unique_ptr<Placement>> MakePlacement(Algorithm algorithm,
                                                   const std::vector<NodeSpec>& nodes,
                                                   const PlacementOptions& options) {
  switch (algorithm) {
    case Algorithm::kRing:
      return Upcast(HashRing::Build(nodes, options.vnodes, options.hash));
    case Algorithm::kJump:
      return Upcast(JumpPlacement::Build(nodes, options.hash));
    case Algorithm::kMaglev:
      return Upcast(Maglev::Build(nodes, options.maglev_table_size, options.hash));
    case Algorithm::kRendezvous:
      return Upcast(Rendezvous::Build(nodes, options.hash));
    case Algorithm::kKetama:
      return Upcast(Ketama::Build(nodes));
    case Algorithm::kModulo:
      return Upcast(Modulo::Build(nodes, options.hash));
  }
  return Status::InvalidArgument("unknown algorithm");
}

}  // namespace shardkv
