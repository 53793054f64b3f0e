#include "common/loop_turn.h"

#include <utility>

namespace shardkv::common {
namespace {

thread_local LoopTurn::Queue tls_queue;

}  // namespace

void LoopTurn::Install(Queue queue) { tls_queue = std::move(queue); }

bool LoopTurn::Later(std::function<void()> fn) {
  if (!tls_queue) return false;
  tls_queue(std::move(fn));
  return true;
}

}  // namespace shardkv::common
