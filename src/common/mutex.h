// shardkv::Mutex and shardkv::MutexLock: std::mutex and std::unique_lock with clang
// thread-safety annotations (common/thread_annotations.h).
//
// Why a wrapper: libstdc++'s std::mutex, std::lock_guard and std::unique_lock carry no
// capability attributes, so clang cannot tell that `std::lock_guard lock(mu_)` acquires mu_ and
// every GUARDED_BY(mu_) access would be reported. These thin inline classes add the attributes
// and nothing else: same std::mutex underneath, same cost, and under GCC the annotations vanish.
//
// Usage:
//   Mutex mu_;
//   int count_ GUARDED_BY(mu_) = 0;
//   std::condition_variable changed_;
//
//   void Add() {
//     MutexLock lock(&mu_);
//     ++count_;
//     changed_.notify_all();
//   }
//   bool WaitPositive(std::chrono::steady_clock::time_point deadline) {
//     MutexLock lock(&mu_);
//     while (count_ <= 0) {
//       if (!lock.WaitUntil(changed_, deadline)) return count_ > 0;
//     }
//     return true;
//   }
//
// Waits loop over the condition in the caller instead of handing a predicate lambda to
// std::condition_variable: the analysis checks a lambda as a separate function, which does not
// hold mu_, so a predicate reading guarded members would be reported. The loops above are what
// the predicate overloads of std::condition_variable do, so behaviour is the same. (A lambda
// annotated REQUIRES(mu_) may still be called from code holding the lock.)
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/thread_annotations.h"

namespace shardkv::common {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

  // Tells the analysis that the calling thread holds this mutex (for code it cannot follow,
  // such as a callback that its caller runs under the lock). Not checked at run time: a
  // std::mutex cannot say who owns it.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope, like std::unique_lock: it can be released early with Unlock()
// and taken again with Lock(), and it waits on a std::condition_variable.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : lock_(mu->mu_) {}
  ~MutexLock() RELEASE() = default;  // unlocks only if still held, as std::unique_lock does
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() { lock_.unlock(); }
  void Lock() ACQUIRE() { lock_.lock(); }

  // Waits on `cv` until notified (or woken spuriously): the caller loops over its condition.
  // The mutex is released during the wait and held again on return; the analysis does not see
  // the gap and need not, since none of the caller's code runs in it.
  void Wait(std::condition_variable& cv) { cv.wait(lock_); }

  // Like Wait(), but returns false once `deadline` has passed (true when notified).
  template <typename Clock, typename Duration>
  bool WaitUntil(std::condition_variable& cv,
                 const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv.wait_until(lock_, deadline) == std::cv_status::no_timeout;
  }

  // The underlying std::unique_lock, for other std::condition_variable calls (a predicate that
  // reads only atomics, say). Do not lock or unlock through it: that would bypass the analysis
  // (use Lock()/Unlock() above).
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace shardkv::common
