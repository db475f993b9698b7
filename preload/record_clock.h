// The time stamp of the preload's records. It must be the session's clock (CLOCK_MONOTONIC, as
// the kernel stamps the session's records with use_clockid) for the profiler to merge the rings,
// and never go back in ring order, across every thread and process writing the ring. Reading
// CLOCK_MONOTONIC for each record was a fifth of the hooks' time under `--alloc=1` (two records
// per allocation); where the kernel's clock is the TSC (Control::tsc_clock), the time is the
// last reading plus the TSC ticks since then, at the rate measured between the last two readings,
// and CLOCK_MONOTONIC is read again once that would reach kClockResyncNs past the last reading.
// Error: the rate comes from two readings at least kClockResyncNs apart, each a TSC pair around
// one clock_gettime within kClockPairTicks, so an extrapolated time is off by at most about
// kClockPairTicks ticks (well under a microsecond).
//
// Header only: the preload includes it, and so do its unit tests (with fake sources). Call with
// the ring lock held; allocates nothing, calls only the sources (and reads g_tsc_forbidden).
#ifndef NATIVEPROF_PRELOAD_RECORD_CLOCK_H_
#define NATIVEPROF_PRELOAD_RECORD_CLOCK_H_

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <ctime>

#include "sampler/alloc_channel_layout.h"

namespace nativeprof::preload {

// Set once a thread of the process has forbidden itself the TSC (prctl(PR_SET_TSC,
// PR_TSC_SIGSEGV), as record-and-replay tools and some sandboxes do): reading it then raises
// SIGSEGV, and so does the vDSO's clock_gettime where the kernel's clock is the TSC. The
// preload's clock then asks the kernel (the clock_gettime system call) instead.
inline std::atomic<bool> g_tsc_forbidden{false};

inline bool TscForbidden() { return g_tsc_forbidden.load(std::memory_order_relaxed); }

// CLOCK_MONOTONIC in ns: the session's clock, read directly.
inline uint64_t MonotonicNowNs() {
  timespec ts{};
  if (__builtin_expect(TscForbidden(), 0)) {
    ::syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  } else {
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
  }
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline constexpr uint64_t kClockResyncNs = 1'000'000;
// A reading whose TSC pair is further apart than this was interrupted (preempted, say) and
// says nothing about the rate.
inline constexpr uint64_t kClockPairTicks = 2000;

// The next record's time. `sources` provides Tsc() (the TSC) and MonotonicNs()
// (CLOCK_MONOTONIC in ns).
template <typename Sources>
uint64_t NextRecordTime(alloc_channel::Control& c, Sources& sources) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  uint64_t t;
  if (c.tsc_clock == 0 || TscForbidden()) {
    t = sources.MonotonicNs();
  } else {
    const uint64_t tsc = sources.Tsc();
    const uint64_t base_tsc = c.clock_tsc.load(kRelaxed);
    const uint64_t base_ns = c.clock_ns.load(kRelaxed);
    const uint64_t mult = c.clock_mult.load(kRelaxed);
    uint64_t elapsed = kClockResyncNs;
    if (mult != 0 && tsc >= base_tsc) {
      const unsigned __int128 scaled = static_cast<unsigned __int128>(tsc - base_tsc) * mult;
      elapsed = (scaled >> 32) < kClockResyncNs ? static_cast<uint64_t>(scaled >> 32)
                                                : kClockResyncNs;
    }
    if (elapsed < kClockResyncNs) {
      t = base_ns + elapsed;
    } else {
      t = sources.MonotonicNs();
      const uint64_t tsc_after = sources.Tsc();
      const uint64_t mid = tsc + (tsc_after - tsc) / 2;
      if (tsc_after >= tsc && tsc_after - tsc <= kClockPairTicks) {
        if (base_tsc == 0 || mid <= base_tsc || t <= base_ns) {
          c.clock_tsc.store(mid, kRelaxed);  // the first reading (or one the TSC went back on)
          c.clock_ns.store(t, kRelaxed);
          c.clock_mult.store(0, kRelaxed);
        } else if (t - base_ns >= kClockResyncNs) {
          c.clock_mult.store(static_cast<uint64_t>((static_cast<unsigned __int128>(t - base_ns)
                                                    << 32) / (mid - base_tsc)),
                             kRelaxed);
          c.clock_tsc.store(mid, kRelaxed);
          c.clock_ns.store(t, kRelaxed);
        }
        // else: too soon after the base to measure the rate; keep the base for a later reading.
      }
    }
  }
  const uint64_t last = c.last_time_ns.load(kRelaxed);
  if (t < last) t = last;
  c.last_time_ns.store(t, kRelaxed);
  return t;
}

}  // namespace nativeprof::preload

#endif  // NATIVEPROF_PRELOAD_RECORD_CLOCK_H_
