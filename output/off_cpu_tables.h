// The off-CPU parts of `report`: each thread's split of its lifetime (on-CPU, blocked, waiting
// for a CPU) from the off_cpu section `record --off-cpu` writes into FILE.json, and the call
// sites that blocked longest in an off-CPU profile. Text rendering; pure.
#ifndef NATIVEPROF_OUTPUT_OFF_CPU_TABLES_H_
#define NATIVEPROF_OUTPUT_OFF_CPU_TABLES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "output/frame_modules.h"
#include "output/table_format.h"
#include "symbolize/profile.h"

namespace nativeprof::output {

// metadata["off_cpu"]["threads"] (record --off-cpu's per-thread split), or null when the
// metadata has no such array.
const nlohmann::json* RecordedThreads(const nlohmann::json& metadata);

// "Threads (on-CPU / blocked / waiting for a CPU, of each thread's lifetime)" with one row per
// thread of metadata["off_cpu"]["threads"], the kThreadRows longest-lived at most; "" when the
// metadata has none.
inline constexpr size_t kThreadRows = 40;
std::string RenderThreadSplit(const nlohmann::json& metadata,
                              TableFormat format = TableFormat::kText);

struct BlockingCallSite {
  std::string name;  // "caller > call": the call that entered the kernel and its caller
  uint64_t count = 0;  // in the profile's count unit (us)
};

// The call sites of an off-CPU profile by time blocked, most first (top `top_n`): for each
// stack, the innermost frame outside the kernel (the call that entered it, often a libc
// function) and its caller: the innermost frame of another module (`frame_modules`, from the
// metadata; the direct caller where modules are unknown), so the site names the program's own
// code rather than libc's internals. Time waiting for a CPU is not a blocking call: left out.
std::vector<BlockingCallSite> TopBlockingCallSites(const symbolize::Profile& profile,
                                                   size_t top_n,
                                                   const FrameModuleMap* frame_modules);
std::string RenderBlockingCallSites(const std::vector<BlockingCallSite>& sites, uint64_t total,
                                    TableFormat format = TableFormat::kText);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_OFF_CPU_TABLES_H_
