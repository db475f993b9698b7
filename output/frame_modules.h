// The "frame_modules" table of the metadata JSON `record` writes beside its output (OUT.json):
// which module (mapped file basename) each frame name of the folded file came from, so that
// `report --by module` can group a folded file - which has names only - by shared object.
//   "frame_modules": {"modules": ["hotbin", "libc.so.6"],     sorted basenames
//                     "frames": {"main": 0, "malloc": 1},    folded name -> index in "modules"
//                     "omitted": 0}                          frames left out by the bounds
// Pure functions; any thread.
#ifndef NATIVEPROF_OUTPUT_FRAME_MODULES_H_
#define NATIVEPROF_OUTPUT_FRAME_MODULES_H_

#include <cstddef>
#include <span>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "nlohmann/json.hpp"
#include "symbolize/profile.h"

namespace nativeprof::output {

// Bounds on the table, so that OUT.json stays small next to the profile: at most this many
// frames (those with the most samples; ties by name), each name at most this many bytes (a longer
// name is classified by its text alone).
inline constexpr size_t kMaxFrameModuleEntries = 10000;
inline constexpr size_t kMaxFrameModuleNameBytes = 512;

// FrameModulesJson()
//
// The table for `profile`: every frame with a known module, keyed by FoldedFrameName() (the exact
// text of the folded file, "_[i]" suffix included), valued by the basename of
// ProfileFrame::module. Kernel and JIT frames are left out (their module key never depends on the
// file). A name seen in several modules maps to the one with the most samples (ties: smaller
// basename). Deterministic: nlohmann::json objects are ordered by key and "modules" is sorted.
nlohmann::json FrameModulesJson(const symbolize::Profile& profile);
// The same over several profiles of one recording (the CPU or wall view and the allocation
// view), which name different frames: a name takes its module from the first profile that has
// it (their units differ, so their counts are not added).
nlohmann::json FrameModulesJson(std::span<const symbolize::Profile* const> profiles);

// Folded frame name -> module basename.
using FrameModuleMap = absl::flat_hash_map<std::string, std::string>;

// ParseFrameModules()
//
// The table from a metadata document's "frame_modules" member; empty when it is missing or not
// of the shape above (entries of the wrong type, or with an index out of range, are skipped).
FrameModuleMap ParseFrameModules(const nlohmann::json& metadata);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_FRAME_MODULES_H_
