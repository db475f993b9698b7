// What `record --alloc` checks and prepares before the command starts: the preload library's
// path, that the command is dynamically linked (a static binary's malloc cannot be interposed),
// the channel file, and the environment that loads the preload into the command.
#ifndef NATIVEPROF_TOOLS_ALLOC_SETUP_H_
#define NATIVEPROF_TOOLS_ALLOC_SETUP_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sampler/alloc_channel.h"

namespace nativeprof::tools {

inline constexpr char kAllocPreloadName[] = "libnativeprof_alloc.so";

// $NATIVEPROF_ALLOC_LIB, else libnativeprof_alloc.so beside this executable (the build tree),
// else in <prefix>/lib/nativeprof for an install in <prefix>/bin. kNotFound names the places.
absl::StatusOr<std::string> FindAllocPreload();

// kFailedPrecondition for a statically linked ELF executable (no PT_INTERP), and for one whose
// malloc is not glibc's (it defines malloc, or links a library that does: libjemalloc, libasan),
// with the fix. A script or anything that is not an ELF executable is accepted: what it runs may
// be dynamic.
// `path` is the file the command runs (sampler::FindProgram).
absl::Status CheckInterposable(const std::string& path);

// Creates the channel in /dev/shm (else $TMPDIR or /tmp) with a ring of 1 MiB, or more when
// `stack_bytes` (the dwarf stack copy) is large.
absl::StatusOr<sampler::AllocChannel> CreateAllocChannel(uint64_t rate_bytes,
                                                         uint32_t stack_bytes);

// Whether the ELF file at `path` defines malloc or free: an allocator of its own (jemalloc,
// tcmalloc, mimalloc, a sanitizer runtime), which takes the program's allocations away from
// glibc's malloc, the one the preload's hooks forward to. False for what cannot be read.
bool ReplacesAllocator(const std::string& path);

// The file an LD_PRELOAD entry names: itself when it has a '/', else the first match in
// LD_LIBRARY_PATH's directories and then the loader's default ones; "" when none exists.
std::string ResolvePreloadEntry(const std::string& entry);
// Where an object asks the loader to look for the libraries it needs: its DT_RPATH (searched
// before LD_LIBRARY_PATH; only when it has no DT_RUNPATH) or its DT_RUNPATH (searched after).
struct LibrarySearchPath {
  std::vector<std::string> rpath;
  std::vector<std::string> runpath;
};
// The same for a DT_NEEDED entry of an object with `search`, in the loader's order (then the
// directories /etc/ld.so.conf lists, which ld.so.cache holds, and the default ones).
std::string ResolveLibrary(const std::string& entry, const LibrarySearchPath& search);

// LD_PRELOAD (the preload first, then whatever the user preloads) and NATIVEPROF_ALLOC_CHANNEL.
// A user's preload that replaces the allocator is left out: its malloc would never be called
// (the hooks forward to glibc's) while its own operator new and malloc_usable_size would be,
// on blocks of the other allocator. Each one left out adds a line to `notes`.
std::vector<std::pair<std::string, std::string>> AllocEnvironment(
    const std::string& preload, const sampler::AllocChannel& channel,
    std::vector<std::string>* notes);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_ALLOC_SETUP_H_
