// Names addresses. The facade over every symbol source (ELF .symtab/.dynsym, separate debug files,
// MiniDebugInfo, DWARF inline frames and lines, kallsyms, perf JIT maps, the vdso), caching each
// module's tables by ModuleId the first time it is needed. Used once per distinct address after
// the target exits (not on the sampling path). Not thread-safe.
#ifndef NATIVEPROF_SYMBOLIZE_SYMBOLIZER_H_
#define NATIVEPROF_SYMBOLIZE_SYMBOLIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/cache_dir.h"
#include "module/debug_file_finder.h"
#include "sampler/module_registry.h"
#include "symbolize/profile.h"

namespace nativeprof::unwind {
class CollectedFrame;
class StackCollector;
}  // namespace nativeprof::unwind

namespace nativeprof::symbolize {

struct SymbolizerOptions {
  bool inline_frames = true;   // expand DWARF inline chains (--no-inline turns off)
  bool lines = false;          // file:line on leaf frames (--lines)
  bool full_names = false;     // keep C++ argument lists and Rust hashes (--full-names)
  bool addresses = false;      // unnamed frames as "libfoo.so+0x1a2b" instead of "[libfoo.so]"
  // Roots searched for separate debug files (<dir>/.build-id/xx/yyyy.debug, <dir>/<module dir>/).
  std::vector<std::string> debug_dirs = module::DefaultDebugDirs();
  // Where JIT runtimes write perf-PID.map.
  std::string perf_map_dir = "/tmp";
  // Kept between runs: decompressed debug files and the kernel's symbols (base/cache_dir.h).
  std::optional<CacheDir> cache = CacheDir::FromEnvironment();
  // Load each mapped module's symbols on a background thread as NoteMapping sees it, so they are
  // ready when the recording stops (symbolize/module_prefetcher.h). Off for a symbolizer inside
  // the process it profiles, where that thread would run beside the code being measured.
  bool prefetch = false;
};

// One symbolized frame for one address; an address inside inlined code yields several, innermost
// (the inlined callee) first, the outermost (the real function) last.
struct SymbolizedFrame {
  std::string function;
  ProfileFrameKind kind = ProfileFrameKind::kUser;
  std::string file;
  uint32_t line = 0;
};

// Quality figures for the run summary.
struct SymbolizationStats {
  uint64_t addresses = 0;        // distinct addresses symbolized
  uint64_t named = 0;            // of which got a function name
  struct ModuleMiss {
    std::string module;
    uint64_t unnamed = 0;
    std::string reason;          // "stripped, no debug file found", "no module", ...
    std::string advice;          // "install libfoo-dbgsym", "build with -g", ...
    // False for addresses nothing could name (sampled inside execve, in no image): they are in
    // neither `addresses` nor `named`, and the summary does not count them as a problem.
    bool fixable = true;
  };
  std::vector<ModuleMiss> worst_modules;  // most unnamed first
  std::vector<std::string> warnings;      // e.g. "program built without optimization (-O0)"
};

// Whether `function`, a kernel function as kallsyms names it (".isra.0" and kin allowed), is the
// execve system call or the exec code under it (__x64_sys_execve, bprm_execve, load_elf_binary,
// begin_new_exec, ...).
bool IsExecveFunction(absl::string_view function);

// What the rest of its stack tells about a user address in no mapping.
enum class UnmappedContext : uint8_t {
  kNone,
  // The sample's kernel stack is inside execve (IsExecveFunction): past its point of no return
  // the old image is unmapped while the registers still hold its addresses, and the new one has
  // not started, so there is nothing to name the address from and nothing to fix.
  kInsideExecve,
};

class Symbolizer {
 public:
  virtual ~Symbolizer() = default;

  // Symbolizes a user-space address: `file_offset` is the offset in the module's file (the
  // address space resolved avma -> file offset at sample time); `pid` and `avma` are for sources
  // keyed by process (perf maps, the vdso, /proc/PID/map_files). For a return address the caller
  // passes the address of the call (avma - 1). Appends to `out`, innermost first; never fails:
  // an address with no name yields "[module]" (or "module+0xoff" with `addresses`).
  virtual void SymbolizeUser(int32_t pid, sampler::ModuleId module, uint64_t file_offset,
                             uint64_t avma, std::vector<SymbolizedFrame>* out) = 0;
  // An address in no mapping: a JIT frame from /tmp/perf-PID.map if one covers it, else
  // "[unknown]" (always with kInsideExecve, counted apart in Stats()).
  virtual void SymbolizeUnmapped(int32_t pid, uint64_t avma, UnmappedContext context,
                                 std::vector<SymbolizedFrame>* out) = 0;
  // A kernel address, named from /proc/kallsyms (suffix _[k] is added by writers via kind).
  virtual void SymbolizeKernel(uint64_t avma, std::vector<SymbolizedFrame>* out) = 0;

  virtual SymbolizationStats Stats() const = 0;

  // Hooks for the recording thread, called while the target still runs (all optional, cheap, and
  // never fail; errors only lower the quality of later names):
  // A file mapping was seen (MMAP2). Holds an fd to the mapped file (via /proc/PID/map_files) the
  // first time a module is seen, so a binary deleted or replaced later is still read as mapped.
  virtual void NoteMapping(int32_t pid, sampler::ModuleId module, uint64_t start_avma,
                           uint64_t end_avma) {}
  // A [vdso] mapping was seen: copies the image from /proc/PID/mem so vdso frames get names.
  // Without it the vdso of nativeprof itself is used (the same on one kernel for 64-bit targets).
  virtual void NoteVdso(int32_t pid, uint64_t start_avma, uint64_t end_avma) {}
  // A stack with frames no earlier stack had was collected: a prefetching symbolizer prepares
  // their names in the background.
  virtual void NoteFrames(absl::Span<const unwind::CollectedFrame> frames) {}
};

std::unique_ptr<Symbolizer> MakeSymbolizer(const sampler::ModuleRegistry& modules,
                                           const SymbolizerOptions& options);

// A symbolizer for `collector`'s modules that is told of every code mapping the moment the
// collector applies it, while the process is still alive (NoteMapping holds the file, NoteVdso
// copies the vdso), and of every new stack's frames (NoteFrames): `record` and the library both
// symbolize this way. Installs itself as the collector's mapping and new-frames observer, so it
// must outlive the collector's use.
std::unique_ptr<Symbolizer> MakeMappingAwareSymbolizer(unwind::StackCollector& collector,
                                                       const SymbolizerOptions& options);

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_SYMBOLIZER_H_
