#include "change_guard.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <cstdio>

namespace shardkv::cli {

InterruptGuard::InterruptGuard() {
  sigemptyset(&set_);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&set_, sig);
  pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
  watcher_ = std::thread([this] { Watch(); });
}

InterruptGuard::~InterruptGuard() {
  stop_ = true;
  watcher_.join();
  int pending = 0;
  {
    std::lock_guard lock(mu_);
    pending = remembered_;
  }
  if (pending != 0) Die(pending);
  // A SIGPIPE left pending by a write to a closed pipe is dropped, not delivered: the command has
  // finished (and cleaned up) by now.
  sigset_t waiting;
  sigpending(&waiting);
  if (sigismember(&waiting, SIGPIPE)) {
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    const timespec zero{0, 0};
    sigtimedwait(&pipe_only, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

void InterruptGuard::Arm(std::function<void()> undo) {
  std::lock_guard lock(mu_);
  undo_ = std::move(undo);
  mode_ = Mode::kArmed;
}

void InterruptGuard::Busy() {
  std::lock_guard lock(mu_);
  mode_ = Mode::kBusy;
}

void InterruptGuard::Disarm() {
  int pending = 0;
  {
    std::lock_guard lock(mu_);
    mode_ = Mode::kIdle;
    undo_ = nullptr;
    pending = remembered_;
  }
  if (pending != 0) Die(pending);
}

void InterruptGuard::UndoNow() {
  std::lock_guard lock(mu_);
  if (mode_ != Mode::kIdle && undo_) undo_();  // also while kBusy: a refused begin
  undo_ = nullptr;
  mode_ = Mode::kIdle;
}

int InterruptGuard::Interrupted() {
  std::lock_guard lock(mu_);
  return remembered_;
}

void InterruptGuard::RunUndoLocked(int sig) {
  if (mode_ != Mode::kArmed || !undo_) return;
  std::fprintf(stderr, "\ninterrupted (%s): undoing what this command started\n",
               sigabbrev_np(sig) ? sigabbrev_np(sig) : "signal");
  undo_();
  undo_ = nullptr;
  mode_ = Mode::kIdle;
  std::fprintf(stderr, "interrupted: nothing changed\n");
}

void InterruptGuard::CheckPipe() {
  sigset_t waiting;
  sigpending(&waiting);
  if (!sigismember(&waiting, SIGPIPE)) return;
  std::lock_guard lock(mu_);
  if (mode_ == Mode::kBusy) {
    remembered_ = SIGPIPE;
    return;
  }
  RunUndoLocked(SIGPIPE);
  Die(SIGPIPE);
}

void InterruptGuard::Watch() {
  // Bounded waits, so the destructor can stop the thread.
  while (!stop_) {
    const timespec tick{0, 100 * 1000 * 1000};
    const int sig = sigtimedwait(&set_, nullptr, &tick);
    if (sig <= 0) continue;
    std::lock_guard lock(mu_);
    if (mode_ == Mode::kBusy) {
      remembered_ = sig;
      continue;
    }
    RunUndoLocked(sig);
    Die(sig);
  }
}

void InterruptGuard::Die(int sig) {
  std::fflush(stdout);
  std::fflush(stderr);
  // The default action of every guarded signal terminates the process: restore it, unblock the
  // signal in this thread and send it to this thread.
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  raise(sig);
  _exit(128 + sig);  // not reached
}

}  // namespace shardkv::cli
