// Allocation-heavy workload for measuring the allocation profiler's overhead: a word count over
// a synthetic text. Each line's words are malloc'd copies (8-256 B) collected in a token array
// that grows by realloc; a word seen for the first time gets a node and a copy in a hash table,
// which lives to the end; everything else is freed when the line is done. A word is looked up
// as a word count does: by a hash of its text, then compared whole. A fixed-seed PRNG makes every
// run do the same calls: 19.5 M allocation calls, about 20 M a second unprofiled here (issue 13's
// density: its Rust word count made 19.6 M in 0.88 s).
// `dense` looks a word up by its number and compares 4 bytes: the same calls, twice as densely
// (about 42 M a second), so the allocator hooks are a larger share of the time.
// Usage: alloc_heavy [SCALE [dense]] (SCALE 1: 1,500,000 lines). Prints one line of results.
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kVocabulary = 2048, kBuckets = 4096, kLeakedBlocks = 16, kLeakedSize = 256 };

typedef struct Node {
  struct Node* next;
  char* word;
  uint32_t id;
  uint32_t count;
} Node;

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t g_alloc_calls;  // counted here so the output can be checked against a profiler
static Node* g_table[kBuckets];
static int g_dense;  // look words up by number, not by their text

static uint64_t Next(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

static void* Malloc(size_t n) {
  ++g_alloc_calls;
  void* p = malloc(n);
  if (p == NULL) _exit(2);
  return p;
}

static void* Realloc(void* p, size_t n) {
  ++g_alloc_calls;
  p = realloc(p, n);
  if (p == NULL) _exit(2);
  return p;
}

// A word's length and text follow from its id, so repeated words compare equal.
static size_t WordLength(uint32_t id) { return 8 + id % 249; }

__attribute__((noinline)) char* copy_word(uint32_t id) {
  size_t n = WordLength(id);
  char* w = Malloc(n);
  memset(w, 'a' + id % 26, n - 1);
  memcpy(w, &id, sizeof(id));
  w[n - 1] = '\0';
  return w;
}

// The word's text hashed 8 bytes at a time (FxHash's step, as rustc-hash does it).
__attribute__((noinline)) uint64_t hash_word(const char* word, size_t n) {
  uint64_t h = 0;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t w = 0;
    memcpy(&w, word + i, n - i < 8 ? n - i : 8);
    h = (((h << 5) | (h >> 59)) ^ w) * 0x517cc1b727220a95ull;
  }
  return h;
}

__attribute__((noinline)) void count_word(uint32_t id, const char* word) {
  const size_t n_bytes = g_dense ? sizeof(id) : WordLength(id);
  Node** bucket = &g_table[(g_dense ? id : hash_word(word, n_bytes)) % kBuckets];
  for (Node* n = *bucket; n != NULL; n = n->next) {
    if (n->id == id && memcmp(n->word, word, n_bytes) == 0) {
      ++n->count;
      return;
    }
  }
  Node* n = Malloc(sizeof(Node));
  n->word = copy_word(id);
  n->id = id;
  n->count = 1;
  n->next = *bucket;
  *bucket = n;
}

// Skewed towards small ids, as word frequencies are: the minimum of two uniform draws.
static uint32_t NextWord(void) {
  uint64_t r = Next();
  uint32_t a = (uint32_t)(r % kVocabulary), b = (uint32_t)((r >> 32) % kVocabulary);
  return a < b ? a : b;
}

__attribute__((noinline)) uint64_t count_line(void) {
  char** tokens = NULL;
  uint32_t* ids = NULL;
  size_t size = 0, capacity = 0;
  size_t words = 1 + Next() % 16;
  for (size_t i = 0; i < words; ++i) {
    if (size == capacity) {  // grows 4, 8, 16 as an unreserved vector does
      capacity = capacity ? 2 * capacity : 4;
      tokens = Realloc(tokens, capacity * sizeof(*tokens));
      ids = Realloc(ids, capacity * sizeof(*ids));
    }
    uint32_t id = NextWord();
    ids[size] = id;
    tokens[size++] = copy_word(id);
  }
  uint64_t bytes = 0;
  for (size_t i = 0; i < size; ++i) {
    count_word(ids[i], tokens[i]);
    bytes += WordLength(ids[i]);
    free(tokens[i]);
  }
  free(tokens);
  free(ids);
  return bytes;
}

// A few KB never freed, so a leak report has something known to find.
__attribute__((noinline)) void leak_summary_buffers(void) {
  for (int i = 0; i < kLeakedBlocks; ++i) {
    char* p = Malloc(kLeakedSize);
    p[0] = (char)i;
    __asm__ volatile("" : : "r"(p) : "memory");
  }
}

static uint64_t FreeTable(uint64_t* unique) {
  uint64_t checksum = 0;
  for (int b = 0; b < kBuckets; ++b) {
    for (Node* n = g_table[b]; n != NULL;) {
      Node* next = n->next;
      checksum = checksum * 31 + n->id * 7 + n->count;
      ++*unique;
      free(n->word);
      free(n);
      n = next;
    }
    g_table[b] = NULL;
  }
  return checksum;
}

static char* AppendU64(char* out, const char* label, uint64_t v) {
  while (*label) *out++ = *label++;
  char digits[20];
  int n = 0;
  do digits[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  while (n > 0) *out++ = digits[--n];
  return out;
}

int main(int argc, char** argv) {
  double scale = argc > 1 ? atof(argv[1]) : 1.0;
  g_dense = argc > 2 && strcmp(argv[2], "dense") == 0;
  uint64_t lines = (uint64_t)(scale * 1500000.0);
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < lines; ++i) bytes += count_line();
  leak_summary_buffers();
  uint64_t unique = 0;
  uint64_t checksum = FreeTable(&unique);
  clock_gettime(CLOCK_MONOTONIC, &end);
  uint64_t ms =
      (uint64_t)((end.tv_sec - start.tv_sec) * 1000 + (end.tv_nsec - start.tv_nsec) / 1000000);

  char line[256], *p = line;
  p = AppendU64(p, "alloc_heavy lines=", lines);
  p = AppendU64(p, " word_bytes=", bytes);
  p = AppendU64(p, " unique=", unique);
  p = AppendU64(p, " checksum=", checksum);
  p = AppendU64(p, " alloc_calls=", g_alloc_calls);
  p = AppendU64(p, " ms=", ms);
  *p++ = '\n';
  return write(1, line, (size_t)(p - line)) == p - line ? 0 : 1;
}
