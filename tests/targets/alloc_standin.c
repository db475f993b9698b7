// A stand-in for jemalloc or tcmalloc preloaded by the user: a shared library that replaces
// malloc and its kin, and C++'s operator new and delete, with an allocator of its own (a bump
// allocator over one mapping, which never reuses memory). Like jemalloc, its free, realloc and
// malloc_usable_size abort on a block it did not allocate, so a program that reaches them with
// glibc's blocks dies.
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

// Reserved, not touched: pages come as they are used. Room for alloc_workload's 4 GiB alignment,
// which the preload asks of it as 4 GiB + size at that alignment.
#define ARENA_BYTES ((size_t)64 << 30)

static char* g_arena;
static size_t g_used;  // taken with a compare-and-swap: nativeprof itself runs on it, threaded

typedef struct {
  size_t size;
  size_t pad;
} Header;

static int Mine(void* p) {
  return g_arena != NULL && (char*)p > g_arena && (char*)p < g_arena + ARENA_BYTES;
}

// Maps the arena as the library loads, before any thread can ask for memory.
__attribute__((constructor)) static void MapArena(void) {
  void* m = mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
                 MAP_NORESERVE, -1, 0);
  if (m != MAP_FAILED) g_arena = m;
}

static void* Take(size_t size, size_t align) {
  if (g_arena == NULL) MapArena();  // a call from an earlier constructor
  if (g_arena == NULL || size > ARENA_BYTES) {
    errno = ENOMEM;
    return NULL;
  }
  if (align < 16) align = 16;
  size_t used = __atomic_load_n(&g_used, __ATOMIC_RELAXED);
  size_t at;
  do {
    // Aligned as an address, not as an offset into the arena, which is only page-aligned.
    const uintptr_t base = (uintptr_t)g_arena;
    at = (base + used + sizeof(Header) + align - 1) / align * align - base;
    if (at + size > ARENA_BYTES) {
      errno = ENOMEM;
      return NULL;
    }
  } while (!__atomic_compare_exchange_n(&g_used, &used, at + size, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  ((Header*)(g_arena + at))[-1].size = size;
  return g_arena + at;
}

static size_t SizeOf(void* p) {
  if (!Mine(p)) abort();  // another allocator's block
  return ((Header*)p)[-1].size;
}

void* malloc(size_t size) { return Take(size, 16); }
void free(void* p) {
  if (p != NULL) (void)SizeOf(p);
}
void* calloc(size_t n, size_t size) {
  if (size != 0 && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return NULL;
  }
  return Take(n * size, 16);  // fresh pages of the mapping are zero
}
void* realloc(void* p, size_t size) {
  if (p == NULL) return Take(size, 16);
  const size_t old = SizeOf(p);
  void* q = Take(size, 16);
  if (q != NULL) memcpy(q, p, old < size ? old : size);
  return q;
}
size_t malloc_usable_size(void* p) { return p == NULL ? 0 : SizeOf(p); }
int posix_memalign(void** out, size_t align, size_t size) {
  void* p = Take(size, align);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}
void* aligned_alloc(size_t align, size_t size) { return Take(size, align); }
void* memalign(size_t align, size_t size) { return Take(size, align); }
void* valloc(size_t size) { return Take(size, 4096); }
void* _Znwm(size_t size) { return Take(size, 16); }  // operator new(size_t)
void _ZdlPv(void* p) { free(p); }                    // operator delete(void*)
