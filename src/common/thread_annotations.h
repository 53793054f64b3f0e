// Clang thread-safety annotations (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html).
//
// They let the compiler check the locking rules that used to live in `// GUARDED_BY(mu_)`
// comments: a member marked GUARDED_BY(mu_) may only be touched with mu_ held, a function marked
// REQUIRES(mu_) may only be called with it held, and so on. Under clang with -Wthread-safety
// (tools/check.sh, stage "clang thread-safety") a violation is a compile error; under any other
// compiler the macros expand to nothing, so they cost nothing and never break the GCC builds.
//
// The analysis only understands capabilities whose lock and unlock functions carry these
// attributes. libstdc++'s std::mutex and std::lock_guard carry none, so guarded state is
// protected by shardkv::Mutex and locked with shardkv::MutexLock (common/mutex.h).
//
// What it cannot see: lambdas are separate functions (a lambda run under the caller's lock must
// say REQUIRES itself or be restructured), and constructors and destructors are not checked.
#pragma once

#if defined(__clang__)
#define SHARDKV_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SHARDKV_THREAD_ANNOTATION(x)
#endif

// On a class: its objects are capabilities (locks). `x` names the kind in diagnostics.
#ifndef CAPABILITY
#define CAPABILITY(x) SHARDKV_THREAD_ANNOTATION(capability(x))
#endif

// On a class: an RAII object that acquires a capability in its constructor and releases it in
// its destructor.
#ifndef SCOPED_CAPABILITY
#define SCOPED_CAPABILITY SHARDKV_THREAD_ANNOTATION(scoped_lockable)
#endif

// On a data member: reads and writes need the capability held (writes: held exclusively).
#ifndef GUARDED_BY
#define GUARDED_BY(x) SHARDKV_THREAD_ANNOTATION(guarded_by(x))
#endif

// On a pointer member: the pointer itself is free, the data it points at is guarded.
#ifndef PT_GUARDED_BY
#define PT_GUARDED_BY(x) SHARDKV_THREAD_ANNOTATION(pt_guarded_by(x))
#endif

// On a capability member: documents (and checks) a lock order.
#ifndef ACQUIRED_BEFORE
#define ACQUIRED_BEFORE(...) SHARDKV_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#endif
#ifndef ACQUIRED_AFTER
#define ACQUIRED_AFTER(...) SHARDKV_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#endif

// On a function: the caller must hold the capabilities (exclusively / at least shared) on entry,
// and still holds them on return.
#ifndef REQUIRES
#define REQUIRES(...) SHARDKV_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#endif
#ifndef REQUIRES_SHARED
#define REQUIRES_SHARED(...) SHARDKV_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#endif

// On a function: it acquires (ACQUIRE) or releases (RELEASE) the capabilities. With no argument
// on a member function of a capability class, the capability is `this`.
#ifndef ACQUIRE
#define ACQUIRE(...) SHARDKV_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#endif
#ifndef ACQUIRE_SHARED
#define ACQUIRE_SHARED(...) SHARDKV_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#endif
#ifndef RELEASE
#define RELEASE(...) SHARDKV_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#endif
#ifndef RELEASE_SHARED
#define RELEASE_SHARED(...) SHARDKV_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#endif

// On a function: it tries to acquire the capabilities and returns `x` (true/false) on success.
#ifndef TRY_ACQUIRE
#define TRY_ACQUIRE(...) SHARDKV_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#endif
#ifndef TRY_ACQUIRE_SHARED
#define TRY_ACQUIRE_SHARED(...) \
  SHARDKV_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))
#endif

// On a function: the caller must NOT hold the capabilities (the function takes them itself;
// catches self-deadlock on a non-recursive mutex).
#ifndef EXCLUDES
#define EXCLUDES(...) SHARDKV_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#endif

// On a function: it checks at run time that the capability is held, so after the call the
// analysis may assume it is.
#ifndef ASSERT_CAPABILITY
#define ASSERT_CAPABILITY(x) SHARDKV_THREAD_ANNOTATION(assert_capability(x))
#endif
#ifndef ASSERT_SHARED_CAPABILITY
#define ASSERT_SHARED_CAPABILITY(x) SHARDKV_THREAD_ANNOTATION(assert_shared_capability(x))
#endif

// On a function: it returns a reference to the capability `x` (an accessor for a lock).
#ifndef RETURN_CAPABILITY
#define RETURN_CAPABILITY(x) SHARDKV_THREAD_ANNOTATION(lock_returned(x))
#endif

// On a function: the analysis skips its body. Every use says, in a comment, why the analysis
// cannot follow it; prefer restructuring.
#ifndef NO_THREAD_SAFETY_ANALYSIS
#define NO_THREAD_SAFETY_ANALYSIS SHARDKV_THREAD_ANNOTATION(no_thread_safety_analysis)
#endif
