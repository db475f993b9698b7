// libFuzzer target for the two trackers that turn time-ordered records into time and memory
// figures: the OffCpuTracker (switch samples, switch records, thread creation and exit, CPU
// samples) and the AllocTracker (sampled allocations and frees of sampled blocks). The input is
// a sequence of 8-byte events in record order; times only move forward, as the record sorter
// delivers them. After Finish, every figure must be finite and consistent with what went in.
//   [0] op  [1] thread (8 of them, in 2 processes)  [2] stack  [3] block address  [4..7] payload
// Ops 240-255 are the process events the allocation tracker follows (a fork, an exec).
// Byte 0 of the whole input picks the allocation sampling rate (1: every allocation).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tests/fuzz/fuzz_checks.h"
#include "unwind/alloc_tracker.h"
#include "unwind/off_cpu_tracker.h"

namespace {

using nativeprof::fuzz::Check;

constexpr uint32_t kStacks = 16;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint64_t rate = data[0] < 128 ? 1 : uint64_t{1} << (data[0] % 24);
  nativeprof::unwind::AllocTracker alloc(rate);
  nativeprof::unwind::OffCpuTracker off_cpu;
  const uint64_t start_ns = 1'000'000;
  off_cpu.set_recording_start(start_ns);
  uint64_t now = start_ns;
  uint64_t allocs = 0;
  uint64_t frees = 0;
  bool images_ended = false;
  for (size_t at = 1; at + 8 <= size; at += 8) {
    const uint8_t* e = data + at;
    uint32_t payload;
    std::memcpy(&payload, e + 4, 4);
    const int32_t tid = 100 + (e[1] & 7);
    const int32_t pid = (e[1] & 4) != 0 ? 104 : 100;
    const uint32_t stack = e[2] % kStacks;
    const uint64_t block = 0x10000 + uint64_t{e[3]} * 16;
    now += payload & 0xffff;  // records arrive in time order
    switch (e[0] >= 240 ? 9 + (e[0] & 1) : e[0] % 9) {
      case 0: off_cpu.OnSwitchSample(pid, tid, now, stack); break;
      case 1: off_cpu.OnSwitch(pid, tid, now, /*out=*/true, (payload >> 16) & 1); break;
      case 2: off_cpu.OnSwitch(pid, tid, now, /*out=*/false, false); break;
      case 3: off_cpu.OnThreadRan(pid, tid, now); break;
      case 4: off_cpu.OnThreadCreated(pid, tid, now); break;
      case 5: off_cpu.OnThreadExited(tid, now); break;
      case 6:
        off_cpu.NoteExistingThread(pid, tid);
        // Attach mode's /proc snapshot of a thread already blocked.
        if ((payload >> 16) & 1) off_cpu.NoteBlockedAtStart(pid, tid, now, stack);
        break;
      case 7:
        alloc.OnAlloc(stack, static_cast<uint32_t>(pid), block, 1 + (payload >> 16) * 64, now);
        ++allocs;
        break;
      case 8:
        alloc.OnFree(static_cast<uint32_t>(pid), block, (payload >> 16) & 1, now);
        ++frees;
        break;
      case 9: alloc.OnProcessForked(static_cast<uint32_t>(pid)); break;
      case 10:  // an exec, as StackCollector::OnComm passes it on
        alloc.OnImageEnded(static_cast<uint32_t>(pid), now);
        off_cpu.OnExec(pid, now);
        images_ended = true;
        break;
    }
  }
  const uint64_t stop_ns = now + 1;
  off_cpu.Finish(stop_ns);
  alloc.Finish();

  for (const nativeprof::unwind::OffCpuInterval& i : off_cpu.intervals()) {
    Check(i.start_ns >= start_ns && i.start_ns <= stop_ns);
    Check(i.duration_ns <= stop_ns - i.start_ns);
    Check(i.stack == nativeprof::unwind::kNoSampledStack || i.stack < kStacks);
  }
  for (const nativeprof::unwind::ThreadTimes& t : off_cpu.Threads()) {
    Check(t.first_ns <= t.last_ns && t.last_ns <= stop_ns);
    // The time without a main thread before an exec lies within the thread's span.
    Check(t.gone_ns <= t.last_ns - t.first_ns);
    // Off-CPU time lies within the thread's lifetime in the recording.
    Check(t.blocked_ns + t.waiting_ns <= stop_ns - start_ns);
  }

  Check(alloc.unmatched_frees() + alloc.inherited_frees() <= frees);
  Check(std::isfinite(alloc.peak_bytes()) && alloc.peak_bytes() >= 0);
  Check(alloc.sites().size() <= kStacks);
  uint64_t samples = 0;
  double live = 0;
  for (const nativeprof::unwind::AllocSite& s : alloc.sites()) {
    for (double v : {s.bytes, s.count, s.temporary, s.freed, s.lifetime_ns, s.live_bytes,
                     s.live_count, s.peak_bytes, s.peak_count}) {
      Check(std::isfinite(v));
    }
    // A weight is at least 1 and a sum of them only shrinks by what was added: the live figures
    // stay between 0 and what was allocated, up to rounding.
    const double slack = 1e-6 * (s.bytes + 1);
    Check(s.count >= static_cast<double>(s.samples));
    Check(s.live_bytes >= -slack && s.live_bytes <= s.bytes + slack);
    Check(s.peak_bytes >= -slack && s.peak_bytes <= s.bytes + slack);
    Check(s.temporary <= s.freed + 1e-6 * (s.count + 1) && s.freed <= s.count + 1e-6 * s.count);
    samples += s.samples;
    live += s.live_bytes;
  }
  Check(samples == allocs);
  // What ended images left is leaked but was never live beside what came after.
  if (!images_ended) Check(live <= alloc.peak_bytes() * (1 + 1e-9) + 1e-6);
  if (rate == 1) {
    for (const nativeprof::unwind::AllocSite& s : alloc.sites()) {
      Check(s.count == static_cast<double>(s.samples));  // exact counts, no weights
    }
  }
  return 0;
}
