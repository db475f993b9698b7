// The allocator the hooks forward to. Normally glibc's, through its __libc_* entry points, which
// need no symbol lookup. A program that links an allocator replacing malloc without defining
// __libc_malloc (jemalloc does; tcmalloc defines it, so __libc_malloc already reaches it) keeps
// that allocator under the preload: blocks it handed out itself (its own operator new's) come to
// the preload's free and must go back to it, where glibc's free aborts on them. Such a process
// forwards to the definitions that follow the preload's (RTLD_NEXT), all from the object that
// defines malloc (else it stays on glibc's), decided once, at the process's first call into the
// hooks, before any block exists. Not safe for certain: the preload tells its own blocks from
// the allocator's by the 12-bit magic in front of them, which the bytes in front of one of the
// allocator's (another block's) can hold, and a sized delete of an over-aligned block goes to
// the allocator's sdallocx with the preload's pointer; the CLI refuses such a command, and only
// a program the command starts gets here.
#ifndef NATIVEPROF_PRELOAD_ALLOCATOR_BACKEND_H_
#define NATIVEPROF_PRELOAD_ALLOCATOR_BACKEND_H_

#include <atomic>
#include <cstddef>

#include "preload/alloc_accounting.h"

namespace nativeprof::preload {

inline constexpr int kBackendUnresolved = 0;
inline constexpr int kBackendResolving = 1;
inline constexpr int kBackendGlibc = 2;
inline constexpr int kBackendNext = 3;

namespace internal {
extern std::atomic<int> g_backend __attribute__((visibility("hidden")));
}  // namespace internal

// The common case, one load: glibc's allocator, known to be.
NP_ALWAYS_INLINE bool BackendIsGlibc() {
  return internal::g_backend.load(std::memory_order_relaxed) == kBackendGlibc;
}

// BackendIsNext()'s answer once glibc's is ruled out; decides on its first call.
bool DecideBackend();

// Whether the process allocates through the program's own allocator; decides on first use. A
// call made while deciding (from inside dlsym) gets glibc's, and its block must say so.
NP_ALWAYS_INLINE bool BackendIsNext() { return !BackendIsGlibc() && DecideBackend(); }

// Whether the process's malloc is not the library's: the program defines it itself (a statically
// linked jemalloc, as Rust's compiler has) or an LD_PRELOAD library ahead of this one does, and
// its allocations never reach the hooks. Probes it with one malloc(1) and free, uncounted, once
// the channel is attached (without it the hooks forward before they could tell): from the
// library's constructor.
bool MallocIsElsewhere();

// The next allocator's functions; only called once BackendIsNext() said true.
void* NextMalloc(size_t size);
void* NextCalloc(size_t n, size_t size);
void* NextRealloc(void* p, size_t size);
void* NextMemalign(size_t alignment, size_t size);
void NextFree(void* p);
size_t NextUsableSize(void* p);

}  // namespace nativeprof::preload

#endif  // NATIVEPROF_PRELOAD_ALLOCATOR_BACKEND_H_
