// Profiles one region of a C++ program with nativeprof::ScopedProfile, including a thread that
// starts inside the region. Usage: profile_region_cpp OUT.folded
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>

#include "nativeprof/profiler.h"

namespace {

std::atomic<uint64_t> sink{0};

__attribute__((noinline)) void SpinInExampleCpp(std::chrono::milliseconds how_long) {
  const auto end = std::chrono::steady_clock::now() + how_long;
  uint64_t x = 1;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 100000; ++i) x = x * 2862933555777941757ull + 3037000493ull;
  }
  sink += x;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.folded\n", argv[0]);
    return 2;
  }
  absl::StatusOr<nativeprof::Profiler> profiler = nativeprof::Profiler::Create();
  if (!profiler.ok()) {
    std::fprintf(stderr, "nativeprof: %s\n", profiler.status().ToString().c_str());
    return 1;
  }
  {
    nativeprof::ScopedProfile scope(*profiler, argv[1]);
    std::thread worker(SpinInExampleCpp, std::chrono::milliseconds(300));
    worker.join();
    if (absl::Status st = scope.Finish(); !st.ok()) {
      std::fprintf(stderr, "nativeprof: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  absl::StatusOr<nativeprof::CounterSnapshot> counters = profiler->Counters();
  if (counters.ok()) {
    if (auto faults = counters->PageFaults()) std::printf("page-faults %.0f\n", *faults);
    if (auto ipc = counters->Ipc()) std::printf("IPC %.2f\n", *ipc);
  }
  return 0;
}
