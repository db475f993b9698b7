// C++ ground truth for the allocation profiler: operator new/delete, std::string and std::vector
// growth, and a block allocated on one thread and deleted on another. Each site is a noinline
// function, so callchains name it. No iostream or stdio: writing to stdout mallocs its buffer.
//
// In this order (sizes follow libstdc++'s growth policy: a string's capacity at least doubles
// from the 15-char SSO buffer and allocates capacity + 1; a vector doubles from 1 element):
//   new_delete_nodes        1,000 x { new Node (96 B); delete }           1,000 calls     96,000 B
//   build_strings           1,000 strings, 4 appends of 25 chars each:
//                           new char[31], [61], [121], freed on the way    3,000 calls    213,000 B
//   vector_growth           100 vectors of 1,000 push_backs: 11 buffers of
//                           4 x 2^k B (k = 0..10) each                     1,100 calls    818,800 B
//   thread_allocates_nodes  on a std::thread, 1,000 x new Node, which
//   main_deletes_nodes      the main thread deletes after joining          1,000 calls     96,000 B
//   total 6,100 calls, 1,223,800 B, all freed; peak 96,000 B (the handed-over nodes).
//   Temporaries, freed before the thread allocates again: the 1,000 nodes plus each string's and
//   each vector's last buffer, 2,100 (heaptrack, which also wants no free in between, counts
//   only the 1,000 nodes).
//   Not constructed but made by the runtime (heaptrack sees 6,103 calls): libstdc++'s emergency
//   exception pool (malloc(72,704) as the library initializes; only __gnu_cxx::__freeres frees
//   it, which heaptrack calls at exit), std::thread's state object (a 16 B operator new, freed by
//   the new thread) and the thread's DTV (a 320 B calloc in pthread_create, which glibc keeps
//   with the cached stack, so it is never freed).
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Node {
  int64_t values[12];
};
static_assert(sizeof(Node) == 96, "the totals above assume a 96-byte Node");

// The barrier lets the pointer escape, so the compiler cannot elide a new/delete pair.
template <typename T>
void Escape(T* p) {
  __asm__ volatile("" : : "r"(p) : "memory");
}

constexpr int kNodes = 1000;
Node* g_handoff[kNodes];  // static, so handing the nodes over allocates nothing

}  // namespace

__attribute__((noinline)) void new_delete_nodes() {
  for (int i = 0; i < kNodes; ++i) {
    Node* n = new Node;
    n->values[0] = i;
    Escape(n);
    delete n;
  }
}

__attribute__((noinline)) size_t build_strings() {
  size_t total = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string s;
    for (int part = 0; part < 4; ++part) s.append(25, static_cast<char>('a' + (i + part) % 26));
    Escape(s.data());
    total += s.size();
  }
  return total;
}

__attribute__((noinline)) size_t vector_growth() {
  size_t total = 0;
  for (int i = 0; i < 100; ++i) {
    std::vector<int> v;
    for (int j = 0; j < 1000; ++j) v.push_back(i + j);
    Escape(v.data());
    total += v.size();
  }
  return total;
}

__attribute__((noinline)) void thread_allocates_nodes() {
  for (int i = 0; i < kNodes; ++i) {
    g_handoff[i] = new Node;
    g_handoff[i]->values[0] = i;
    Escape(g_handoff[i]);
  }
}

__attribute__((noinline)) void main_deletes_nodes() {
  for (int i = 0; i < kNodes; ++i) delete g_handoff[i];
}

int main() {
  new_delete_nodes();
  bool ok = build_strings() == 100000 && vector_growth() == 100000;
  std::thread worker(thread_allocates_nodes);
  worker.join();
  main_deletes_nodes();
  if (!ok) {
    static const char kMsg[] = "alloc_cxx: unexpected sizes\n";
    (void)!write(2, kMsg, sizeof(kMsg) - 1);
    return 1;
  }
  return 0;
}
