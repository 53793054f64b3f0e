// InterruptGuard: makes Ctrl-C (SIGINT), SIGTERM, SIGHUP and SIGPIPE during `cluster add-node`
// clean up exactly like answering `n` at the prompt (stop the new node, remove its directory),
// instead of leaving a running node that every later `cluster down/up` treats as a member.
//
// How: the constructor blocks those signals in the calling thread, so every thread created
// afterwards (the RPC pools) inherits the mask and a process-directed signal can only be taken by
// the guard's watcher thread (sigtimedwait). SIGPIPE is thread-directed (sent to the thread whose
// write hit a closed pipe): the main thread checks for it with CheckPipe() after its writes.
// After cleaning up, the process dies of the signal it got (the default action), so a shell
// sees what it expects from an interrupted command.
//
// Thread-safety: Arm/Busy/Disarm/UndoNow/CheckPipe are called by the thread that built the guard;
// the watcher thread synchronises with them through the mutex.
#pragma once

#include <signal.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

namespace shardkv::cli {

class InterruptGuard {
 public:
  // REQUIRES: constructed before any other thread of the command starts.
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // From now on, a signal runs `undo` (once) and then kills the process.
  void Arm(std::function<void()> undo);
  // The command is at a point it must not be interrupted in (a "begin" in flight: undoing could
  // stop a node the cluster already counts on). A signal is remembered and acted on at Disarm()
  // or at destruction (after the command printed its result).
  void Busy();
  // Nothing more to undo (the change began or was undone). A signal remembered while Busy
  // kills the process now, without undoing.
  void Disarm();
  // Runs the undo now (declined, refused, --plan-only; also while Busy, for a refused begin),
  // unless a signal already ran it.
  void UndoNow();
  // The signal remembered while Busy (0: none yet): a long command (`load`) stops early on it,
  // prints what it did, and dies of it when the guard is destroyed.
  int Interrupted();
  // If a write of this thread raised SIGPIPE (stdout or stderr is a closed pipe), cleans up
  // like a signal would. Call after printing.
  void CheckPipe();

 private:
  void Watch();
  [[noreturn]] void Die(int sig);
  // Runs the undo if armed and not yet run. REQUIRES: mu_ held.
  void RunUndoLocked(int sig);

  sigset_t set_{};
  sigset_t old_mask_{};
  std::mutex mu_;
  std::function<void()> undo_;
  enum class Mode { kIdle, kArmed, kBusy } mode_ = Mode::kIdle;
  int remembered_ = 0;  // a signal that arrived while kBusy
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

}  // namespace shardkv::cli
