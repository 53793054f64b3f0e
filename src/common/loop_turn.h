// LoopTurn: lets code that knows nothing of the event loop run work after the handlers that the
// calling thread's loop has ready now (group commit: design.md "Group commit").
//
// Why: when one epoll wakeup makes many connections readable, the first request's handler
// cannot know that the others are about to run. Work it queues here runs after them, so it can
// take all of their writes at once. A thread that runs an event loop installs its way to queue
// work once, before it runs the loop (net::IoContext's and the Redis server's threads); other
// threads have none, and their callers run the work themselves.
//
// Thread-safety: per thread (thread_local); Install and Later touch only the calling thread's.
#pragma once

#include <functional>

namespace shardkv::common {

class LoopTurn {
 public:
  using Queue = std::function<void(std::function<void()>)>;

  // Installs `queue` as the calling thread's way to run work after the handlers its loop has
  // ready (an empty Queue uninstalls it). `queue` must not run the work inline.
  static void Install(Queue queue);
  // Queues `fn` on the calling thread's loop and returns true; false if the thread runs no loop
  // (then `fn` is dropped and the caller runs the work itself).
  static bool Later(std::function<void()> fn);
};

}  // namespace shardkv::common
