// Loads the symbols of the modules a recording maps while the target still runs, so the names
// are ready when it stops: opening a module's ELF, its debug file and its DWARF unit table was
// a third to a half of what `record` did after a short target exited (libc6-dbg alone: 25 ms).
// Then, with every queued module loaded, it prepares the names of the addresses the recording's
// stacks hold (PrepareNames): indexing a DWARF unit's functions and scopes the first time one
// of its addresses is named was most of the rest (10 ms of 12 for the allocation bench's run).
// One background thread, fed from the drain thread as mappings and new stacks are seen. It runs
// at nice 10 while the target runs (a CPU the target leaves idle does the work; a busy one gives
// it a tenth of a normal thread's share), where nativeprof may raise it again: Stop() gives it
// the caller's own scheduling before waiting for it, so waiting never takes longer than the
// caller doing the work itself would (attached to 256 spinning threads, a nice-10 thread that
// stayed there made the end wait two minutes). The symbolizer stops it before its first name and
// then takes what it loaded; what it had not reached is loaded then, as without it. Thread-safe:
// Add and PrepareNames on one thread, Stop/Take on another.
#ifndef NATIVEPROF_SYMBOLIZE_MODULE_PREFETCHER_H_
#define NATIVEPROF_SYMBOLIZE_MODULE_PREFETCHER_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "base/scoped_fd.h"
#include "sampler/module_registry.h"
#include "symbolize/module_symbols.h"
#include "unwind/stack_collector.h"

namespace nativeprof::symbolize {

// What opening and loading one module gave.
struct LoadedModule {
  absl::Status status;  // OpenModuleImage's: the symbolizer words its messages from it
  std::string key;      // ModuleSymbols::KeyOf, when status is ok
};

class ModulePrefetcher {
 public:
  // Modules queued at most: a process that maps hundreds of libraries gets the first ones ready
  // (the program and what it linked at start), the rest loaded when named.
  static constexpr size_t kMaxModules = 128;

  // Frames queued for PrepareNames at most, over the recording; a frame that several new stacks
  // share counts once per stack (the thread, not the drain, drops the repeats), so fewer distinct
  // addresses may be prepared. A program with more gets its first ones (its hot code is where
  // sampling finds it first) prepared.
  static constexpr size_t kMaxAddresses = size_t{1} << 16;

  explicit ModulePrefetcher(ModuleLoadOptions options, NamingOptions naming = {});
  ~ModulePrefetcher();
  ModulePrefetcher(const ModulePrefetcher&) = delete;
  ModulePrefetcher& operator=(const ModulePrefetcher&) = delete;

  // Queues `module` (a copy of its info, and an fd of the mapped file held since it was seen;
  // taken) for loading. Starts the thread on the first call. Ignored after Stop().
  void Add(sampler::ModuleId module, const sampler::ModuleInfo& info, ScopedFd held_fd);

  // Queues the names of `frames` (those in a module added before) to be prepared once every
  // queued module is loaded (ModuleSymbols::PrepareNames). Ignored after Stop().
  void PrepareNames(absl::Span<const unwind::CollectedFrame> frames);

  // Waits until every module added so far has been loaded, and every address queued prepared.
  void WaitUntilIdle();

  // Drops the queues, gives the thread the calling thread's scheduling policy and nice, and waits
  // for the module it is loading or the address it is preparing, if any. Idempotent.
  void Stop();

  // After Stop(): what loading `module` gave, once; nullopt when it was not reached.
  std::optional<LoadedModule> Take(sampler::ModuleId module);
  // After Stop(): the symbols loaded under `key`, once; null when none (or taken).
  std::unique_ptr<ModuleSymbols> TakeSymbols(const std::string& key);

 private:
  struct Shared;  // what the thread and this object share; Stop() joins it before it goes

  std::unique_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_MODULE_PREFETCHER_H_
