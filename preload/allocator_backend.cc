#include "preload/allocator_backend.h"

#include <dlfcn.h>

extern "C" void* __libc_malloc(size_t size);

namespace nativeprof::preload {

std::atomic<int> internal::g_backend{kBackendUnresolved};

namespace {

struct NextAllocator {
  void* (*malloc)(size_t) = nullptr;
  void* (*calloc)(size_t, size_t) = nullptr;
  void* (*realloc)(void*, size_t) = nullptr;
  void* (*memalign)(size_t, size_t) = nullptr;
  void (*free)(void*) = nullptr;
  size_t (*usable_size)(void*) = nullptr;
};
NextAllocator g_next;

template <typename Fn>
Fn Next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

int Resolve() {
  NextAllocator next;
  next.malloc = Next<decltype(next.malloc)>("malloc");
  // glibc's malloc is an alias of its __libc_malloc; so is tcmalloc's, whose __libc_malloc is
  // the one the hooks call.
  if (next.malloc == nullptr || reinterpret_cast<void*>(next.malloc) ==
                                    reinterpret_cast<void*>(&__libc_malloc)) {
    return kBackendGlibc;
  }
  next.calloc = Next<decltype(next.calloc)>("calloc");
  next.realloc = Next<decltype(next.realloc)>("realloc");
  next.memalign = Next<decltype(next.memalign)>("memalign");
  next.free = Next<decltype(next.free)>("free");
  next.usable_size = Next<decltype(next.usable_size)>("malloc_usable_size");
  // dlsym falls through to glibc's for a function the allocator lacks: each must come from the
  // object malloc came from, or its blocks would go to the other allocator.
  const auto object_of = [](const void* fn) -> const void* {
    Dl_info info{};
    return fn != nullptr && dladdr(fn, &info) != 0 ? info.dli_fbase : nullptr;
  };
  const void* home = object_of(reinterpret_cast<void*>(next.malloc));
  for (const void* fn : {reinterpret_cast<void*>(next.calloc), reinterpret_cast<void*>(next.realloc),
                         reinterpret_cast<void*>(next.memalign), reinterpret_cast<void*>(next.free),
                         reinterpret_cast<void*>(next.usable_size)}) {
    if (home == nullptr || object_of(fn) != home) return kBackendGlibc;
  }
  g_next = next;
  return kBackendNext;
}

}  // namespace

bool DecideBackend() {
  const int state = internal::g_backend.load(std::memory_order_acquire);
  if (state >= kBackendGlibc) return state == kBackendNext;
  // The process's first call comes before it can start a thread: the exchange only keeps a
  // call from inside dlsym from deciding again.
  int expected = kBackendUnresolved;
  if (!internal::g_backend.compare_exchange_strong(expected, kBackendResolving,
                                                   std::memory_order_acq_rel)) {
    return expected == kBackendNext;
  }
  ThreadState& t = CurrentThread();
  ++t.busy;  // dlsym may allocate: not the program's
  const int decided = Resolve();
  --t.busy;
  internal::g_backend.store(decided, std::memory_order_release);
  return decided == kBackendNext;
}

bool MallocIsElsewhere() {
  // Calls malloc as the program does, and sees whether the call reached the hooks: not where
  // the symbol is defined, which a non-PIE program that takes malloc's address defines itself
  // (a PLT entry that leads to the hooks), as does a wrapper that forwards to them.
  using MallocFn = void* (*)(size_t);
  using FreeFn = void (*)(void*);
  ThreadState& t = CurrentThread();
  ++t.busy;  // the lookups and the probe are not the program's allocations
  const auto program_malloc = reinterpret_cast<MallocFn>(dlsym(RTLD_DEFAULT, "malloc"));
  const auto program_free = reinterpret_cast<FreeFn>(dlsym(RTLD_DEFAULT, "free"));
  bool elsewhere = false;
  if (program_malloc != nullptr && program_free != nullptr) {
    t.malloc_probe = true;
    t.malloc_probe_hit = false;
    void* probe = program_malloc(1);
    t.malloc_probe = false;
    elsewhere = probe != nullptr && !t.malloc_probe_hit;
    program_free(probe);
  }
  --t.busy;
  return elsewhere;
}

void* NextMalloc(size_t size) { return g_next.malloc(size); }
void* NextCalloc(size_t n, size_t size) { return g_next.calloc(n, size); }
void* NextRealloc(void* p, size_t size) { return g_next.realloc(p, size); }
void* NextMemalign(size_t alignment, size_t size) { return g_next.memalign(alignment, size); }
void NextFree(void* p) { g_next.free(p); }
size_t NextUsableSize(void* p) { return g_next.usable_size(p); }

}  // namespace nativeprof::preload
