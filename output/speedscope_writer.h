// speedscope writer: the JSON file format documented by speedscope
// (https://www.speedscope.app/file-format-schema.json): shared frames and one "sampled" profile per
// thread. Pure; any thread.
#ifndef NATIVEPROF_OUTPUT_SPEEDSCOPE_WRITER_H_
#define NATIVEPROF_OUTPUT_SPEEDSCOPE_WRITER_H_

#include <string>

#include "symbolize/profile.h"

namespace nativeprof::output {

// Returns the speedscope JSON. Threads are keyed by (pid, tid, name) and ordered by total weight,
// heaviest first (speedscope opens activeProfileIndex 0). With a timeline, each thread's samples
// are in time order, each weighted by its stack's mean period; without one, one sample per stack
// carrying its whole weight. Units: "nanoseconds" when weights are nanoseconds, else "none"
// (sample counts). Frames are deduplicated by displayed name + file + line. `name` is the title.
std::string RenderSpeedscope(const symbolize::Profile& profile, const std::string& name);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_SPEEDSCOPE_WRITER_H_
