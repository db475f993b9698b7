// The stack filters of `nativeprof report`: --focus keeps only the samples whose stack passes
// through a matching frame, --hide drops matching frames from every stack. Both match the folded
// display name (FoldedFrameName: "_[k]" / "_[i]" / "_[j]" suffix included). Pure; any thread.
#ifndef NATIVEPROF_OUTPUT_STACK_FILTER_H_
#define NATIVEPROF_OUTPUT_STACK_FILTER_H_

#include <cstdint>

#include "output/name_regex.h"
#include "symbolize/profile.h"

namespace nativeprof::output {

struct StackFilter {
  const NameRegex* focus = nullptr;  // null: keep every stack
  const NameRegex* hide = nullptr;   // null: hide nothing
};

struct FilteredProfile {
  symbolize::Profile profile;  // the stacks that remain, hidden frames removed
  uint64_t all_samples = 0;    // samples of the input profile
  uint64_t samples = 0;        // samples of `profile` (== all_samples without --focus)
};

// FilterStacks()
//
// Applies `filter` to `profile`:
// * focus first, on the original stack: a stack stays when any of its frames matches, so hiding
//   a frame never changes which samples are focused on;
// * then hide: matching frames are removed from the remaining stacks. A hidden leaf's self
//   samples thereby go to its nearest visible caller; a stack whose every frame is hidden keeps
//   only its thread (its samples still count in the totals). Stacks that become equal (same
//   thread, pid, tid and frames) are merged, samples and weight summed, in first-seen order;
//   the timeline is remapped to the merged stacks.
// Frames no stack uses any more stay in Profile::frames (every consumer counts through stacks).
FilteredProfile FilterStacks(const symbolize::Profile& profile, const StackFilter& filter);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_STACK_FILTER_H_
