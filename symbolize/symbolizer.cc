// The Symbolizer implementation: routes each address to its source (module ELF tables and DWARF,
// kallsyms, perf maps, the vdso), caches module tables by build-id, and keeps the quality figures.

#include "symbolize/symbolizer.h"

#include <fcntl.h>
#include <sys/utsname.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "base/scoped_fd.h"
#include "base/text_escape.h"
#include "module/module_opener.h"
#include "module/module_path.h"
#include "module/vdso.h"
#include "symbolize/display_name.h"
#include "symbolize/kernel_symbols.h"
#include "symbolize/module_prefetcher.h"
#include "symbolize/module_symbols.h"
#include "symbolize/perf_map.h"
#include "unwind/stack_collector.h"

namespace nativeprof::symbolize {
namespace {

// Fds held for modules seen at mmap time; beyond this, modules are opened by path later.
constexpr size_t kMaxHeldFds = 512;
constexpr size_t kMaxWorstModules = 10;

// System libraries are built optimized by their distribution; only the user's own code is checked
// for -O0, so a stray unit in a system library never produces a false alarm.
bool IsSystemPath(absl::string_view path) {
  return absl::StartsWith(path, "/usr/lib") || absl::StartsWith(path, "/lib") ||
         absl::StartsWith(path, "/usr/local/lib");
}

class ElfSymbolizer : public Symbolizer {
 public:
  ElfSymbolizer(const sampler::ModuleRegistry& modules, const SymbolizerOptions& options)
      : modules_(modules),
        options_(options),
        naming_{.inline_frames = options.inline_frames, .full_names = options.full_names} {
    load_options_.debug_dirs = options.debug_dirs;
    load_options_.dwarf = options.inline_frames || options.lines;
    load_options_.cache = options.cache;
    if (options.prefetch) prefetcher_.emplace(load_options_, naming_);
  }

  void SymbolizeUser(int32_t pid, sampler::ModuleId module, uint64_t file_offset, uint64_t avma,
                     std::vector<SymbolizedFrame>* out) override;
  void SymbolizeUnmapped(int32_t pid, uint64_t avma, UnmappedContext context,
                         std::vector<SymbolizedFrame>* out) override;
  void SymbolizeKernel(uint64_t avma, std::vector<SymbolizedFrame>* out) override;
  SymbolizationStats Stats() const override;
  void NoteMapping(int32_t pid, sampler::ModuleId module, uint64_t start_avma,
                   uint64_t end_avma) override;
  void NoteVdso(int32_t pid, uint64_t start_avma, uint64_t end_avma) override;
  void NoteFrames(absl::Span<const unwind::CollectedFrame> frames) override {
    if (prefetcher_.has_value()) prefetcher_->PrepareNames(frames);
  }

 private:
  struct ModuleState {
    bool resolved = false;
    ModuleSymbols* symbols = nullptr;  // owned by symbols_by_key_; null when unreadable
    std::string display;               // basename, for "[libfoo.so]"
    std::string reason;                // why frames may be unnamed (set when resolved)
    std::string advice;
    ScopedFd held_fd;
    bool fd_attempted = false;
    uint64_t unnamed = 0;
  };

  ModuleState& State(sampler::ModuleId module);
  void Resolve(sampler::ModuleId module, ModuleState& state);
  ModuleSymbols* Intern(std::unique_ptr<module::ElfImage> file, const std::string& path);
  // The prefetcher's result for `module`, when it loaded it: its symbols (null when the file
  // could not be opened) and the open's status.
  std::optional<absl::Status> TakePrefetched(sampler::ModuleId module, ModuleSymbols** symbols);
  ModuleSymbols* VdsoFor(int32_t pid);
  void CheckOptimization(ModuleSymbols& symbols, const std::string& path);
  void Unnamed(ModuleState* state, const std::string& display, uint64_t file_offset,
               std::vector<SymbolizedFrame>* out);
  void Warn(std::string warning);

  const sampler::ModuleRegistry& modules_;
  SymbolizerOptions options_;
  NamingOptions naming_;
  ModuleLoadOptions load_options_;
  std::vector<ModuleState> states_;
  absl::flat_hash_map<std::string, std::unique_ptr<ModuleSymbols>> symbols_by_key_;
  size_t held_fds_ = 0;
  std::optional<ModulePrefetcher> prefetcher_;

  std::optional<KernelSymbols> kernel_;
  absl::flat_hash_map<int32_t, std::unique_ptr<SymbolTable>> perf_maps_;  // null: no map
  absl::flat_hash_map<int32_t, ModuleSymbols*> vdso_by_pid_;
  std::optional<ModuleSymbols*> own_vdso_;

  uint64_t addresses_ = 0;
  uint64_t named_ = 0;
  uint64_t unknown_ = 0;  // addresses in no module
  uint64_t unknown_inside_execve_ = 0;  // of those, sampled inside execve (not in addresses_)
  uint64_t kernel_unnamed_ = 0;
  std::vector<std::string> warnings_;
  absl::flat_hash_set<std::string> warned_;
};

ElfSymbolizer::ModuleState& ElfSymbolizer::State(sampler::ModuleId module) {
  if (module >= states_.size()) states_.resize(module + 1);
  return states_[module];
}

void ElfSymbolizer::Warn(std::string warning) {
  if (warned_.insert(warning).second) warnings_.push_back(std::move(warning));
}

void ElfSymbolizer::NoteMapping(int32_t pid, sampler::ModuleId module, uint64_t start_avma,
                                uint64_t end_avma) {
  if (module >= modules_.size()) return;
  const sampler::ModuleInfo& info = modules_.Get(module);
  if (info.is_kernel || !module::HasFile(module::KindOfPath(info.path))) return;
  ModuleState& state = State(module);
  if (state.fd_attempted || held_fds_ >= kMaxHeldFds) return;
  state.fd_attempted = true;
  ScopedFd fd = module::HoldModuleFd(info, pid, start_avma, end_avma);
  if (!fd.valid()) return;
  if (prefetcher_.has_value()) {
    ScopedFd copy(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
    if (copy.valid()) prefetcher_->Add(module, info, std::move(copy));
  }
  state.held_fd = std::move(fd);
  ++held_fds_;
}

ModuleSymbols* ElfSymbolizer::Intern(std::unique_ptr<module::ElfImage> file,
                                     const std::string& path) {
  std::string key = ModuleSymbols::KeyOf(*file, path);
  auto it = symbols_by_key_.find(key);
  if (it != symbols_by_key_.end()) return it->second.get();
  std::unique_ptr<ModuleSymbols> symbols = ModuleSymbols::Load(std::move(file), path, load_options_);
  ModuleSymbols* raw = symbols.get();
  symbols_by_key_.emplace(std::move(key), std::move(symbols));
  return raw;
}

std::optional<absl::Status> ElfSymbolizer::TakePrefetched(sampler::ModuleId module,
                                                          ModuleSymbols** symbols) {
  if (!prefetcher_.has_value()) return std::nullopt;
  prefetcher_->Stop();  // what it had not reached is loaded here, as it would have been without it
  std::optional<LoadedModule> loaded = prefetcher_->Take(module);
  if (!loaded.has_value()) return std::nullopt;
  *symbols = nullptr;
  if (!loaded->status.ok()) return loaded->status;
  auto it = symbols_by_key_.find(loaded->key);
  if (it == symbols_by_key_.end()) {
    // Loaded once per key, by the first module the prefetcher reached with it.
    std::unique_ptr<ModuleSymbols> taken = prefetcher_->TakeSymbols(loaded->key);
    if (taken == nullptr) return std::nullopt;
    it = symbols_by_key_.emplace(loaded->key, std::move(taken)).first;
  }
  *symbols = it->second.get();
  return absl::OkStatus();
}

void ElfSymbolizer::CheckOptimization(ModuleSymbols& symbols, const std::string& path) {
  if (IsSystemPath(path) || symbols.dwarf() == nullptr) return;
  std::string evidence;
  if (symbols.dwarf()->BuiltWithoutOptimization(&evidence)) {
    Warn(absl::StrCat(EscapeForMessage(BaseNameOf(path), kMaxQuotedPathBytes),
                      " was built without optimization (", EscapeForMessage(evidence, 200),
                      "); its profile will mislead: build with -O2 (Rust: --release)"));
  }
}

void ElfSymbolizer::Resolve(sampler::ModuleId module, ModuleState& state) {
  state.resolved = true;
  const sampler::ModuleInfo& info = modules_.Get(module);
  const std::string path = module::PathOnDisk(info.path);
  state.display = std::string(BaseNameOf(path));

  ModuleSymbols* symbols = nullptr;
  absl::Status opened;
  if (std::optional<absl::Status> prefetched = TakePrefetched(module, &symbols)) {
    opened = *std::move(prefetched);
  } else {
    // The target has exited: no process to read /proc/PID/map_files of, so the fd held since
    // the mapping was seen stands in for it.
    absl::StatusOr<std::unique_ptr<module::ElfImage>> file = module::OpenModuleImage(
        module::ModuleRequest{.info = &info, .held_fd = state.held_fd.get()});
    opened = file.status();
    if (file.ok()) symbols = Intern(*std::move(file), path);
  }
  state.held_fd.Reset();
  if (absl::IsFailedPrecondition(opened)) {
    state.reason = "the file on disk is not the one that was mapped";
    state.advice = "do not rebuild or replace the program while it is profiled";
    Warn(absl::StrCat(EscapeForMessage(path, kMaxQuotedPathBytes),
                      " changed on disk after it was mapped (", opened.message(),
                      "); its frames are shown as [", EscapeForMessage(state.display), "]"));
    return;
  }
  if (!opened.ok() && module::KindOfPath(info.path) == module::PathKind::kMemfd) {
    // Not an ELF image (a JIT's double mapping), or gone before it could be held: its
    // addresses go to the perf map, as anonymous code's do.
    state.reason = "a memfd that is not an ELF image, or was unmapped before it was read";
    return;
  }
  if (!opened.ok()) {
    state.reason = absl::StrCat(
        "cannot read the file (", EscapeForMessage(opened.message(), kMaxQuotedPathBytes), ")");
    state.advice = "keep the binary in place until nativeprof has finished";
    Warn(absl::StrCat("cannot read ", EscapeForMessage(path, kMaxQuotedPathBytes),
                      "; its frames are shown as [", EscapeForMessage(state.display), "]"));
    return;
  }
  state.symbols = symbols;
  CheckOptimization(*state.symbols, path);
  for (std::string& skipped : state.symbols->skipped_sections()) Warn(std::move(skipped));

  switch (state.symbols->source()) {
    case NameSource::kNone:
      state.reason = "stripped, no debug file found";
      state.advice = "install its debug symbols (Debian: the -dbg or -dbgsym package) or keep "
                     "symbols out of strip";
      break;
    case NameSource::kDynsym:
      state.reason = "only exported symbols (.dynsym): stripped, no debug file found";
      state.advice = "install its debug symbols (Debian: the -dbg or -dbgsym package) or keep "
                     "symbols out of strip";
      break;
    default:
      state.reason = "address outside every symbol";
      // A distribution's library is what it is (local stubs without symbols); the user's own
      // code can be rebuilt.
      state.advice = IsSystemPath(path) ? "" : "build with -g and keep symbols out of strip";
      break;
  }
  if (!state.symbols->has_cfi()) {
    absl::StrAppend(&state.reason, "; no CFI");
    absl::StrAppend(&state.advice, state.advice.empty() ? "" : "; ",
                    "build with frame pointers or -fasynchronous-unwind-tables");
  }
}

void ElfSymbolizer::Unnamed(ModuleState* state, const std::string& display, uint64_t file_offset,
                            std::vector<SymbolizedFrame>* out) {
  if (state != nullptr) ++state->unnamed;
  SymbolizedFrame frame;
  frame.function = options_.addresses ? absl::StrFormat("%s+0x%x", display, file_offset)
                                      : absl::StrCat("[", display, "]");
  out->push_back(std::move(frame));
}

ModuleSymbols* ElfSymbolizer::VdsoFor(int32_t pid) {
  auto it = vdso_by_pid_.find(pid);
  if (it != vdso_by_pid_.end()) return it->second;
  if (!own_vdso_.has_value()) {
    own_vdso_ = nullptr;
    // Same kernel, same vdso: nativeprof's own is the target's (for targets of the same ABI).
    if (absl::StatusOr<std::string> image = module::ReadOwnVdso(); image.ok()) {
      auto file = module::ElfImage::FromBytes(*std::move(image), "[vdso]");
      if (file.ok()) own_vdso_ = Intern(std::move(*file), "[vdso]");
    }
  }
  return *own_vdso_;
}

void ElfSymbolizer::NoteVdso(int32_t pid, uint64_t start_avma, uint64_t end_avma) {
  if (vdso_by_pid_.contains(pid)) return;
  absl::StatusOr<std::string> image = module::ReadProcessVdso(pid, start_avma, end_avma);
  if (!image.ok()) return;
  auto file = module::ElfImage::FromBytes(*std::move(image), "[vdso]");
  if (!file.ok()) return;
  vdso_by_pid_[pid] = Intern(std::move(*file), "[vdso]");
}

void ElfSymbolizer::SymbolizeUser(int32_t pid, sampler::ModuleId module, uint64_t file_offset,
                                  uint64_t avma, std::vector<SymbolizedFrame>* out) {
  if (module >= modules_.size()) {
    SymbolizeUnmapped(pid, avma, UnmappedContext::kNone, out);
    return;
  }
  const sampler::ModuleInfo& info = modules_.Get(module);
  if (info.is_kernel) {
    SymbolizeKernel(avma, out);
    return;
  }
  ModuleSymbols* symbols = nullptr;
  ModuleState* state = nullptr;
  const module::PathKind kind = module::KindOfPath(info.path);
  if (kind == module::PathKind::kVdso) {
    ++addresses_;
    symbols = VdsoFor(pid);
    state = &State(module);
    if (!state->resolved) {
      state->resolved = true;
      state->display = "vdso";
      // Its image is the running kernel's, read from the target (or from nativeprof itself, the
      // same kernel's): what is unnamed with it is code between its exported entry points.
      if (symbols == nullptr) {
        state->reason = "the vdso image could not be read";
      } else {
        state->reason = "in a vdso function without a symbol: the vdso keeps only its "
                        "exported entry points, such as the caller named above it";
        utsname kernel{};
        const char* release = ::uname(&kernel) == 0 ? kernel.release : "RELEASE";
        state->advice = absl::StrCat(
            "for its internal names install the running kernel's debug symbols (Debian: "
            "linux-image-", EscapeForMessage(release, 64), "-dbg)");
      }
    }
    if (symbols == nullptr) return Unnamed(state, state->display, file_offset, out);
  } else if (kind == module::PathKind::kNoFile) {
    // Anonymous executable memory: JIT code if the runtime wrote a perf map. The kernel reports
    // an anonymous mapping's page offset as its start address, so its "file offset" is the avma
    // itself, which serves when the caller has no avma.
    SymbolizeUnmapped(pid, avma != 0 ? avma : file_offset, UnmappedContext::kNone, out);
    return;
  } else {
    state = &State(module);
    if (!state->resolved) Resolve(module, *state);
    symbols = state->symbols;
    if (symbols == nullptr && kind == module::PathKind::kMemfd) {
      SymbolizeUnmapped(pid, avma != 0 ? avma : file_offset, UnmappedContext::kNone, out);
      return;
    }
    ++addresses_;
    if (symbols == nullptr) return Unnamed(state, state->display, file_offset, out);
  }

  std::vector<DwarfFrame> frames;
  if (!symbols->NameAt(file_offset, naming_, &frames)) {
    return Unnamed(state, state->display, file_offset, out);
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    SymbolizedFrame frame;
    frame.kind = i + 1 == frames.size() ? ProfileFrameKind::kUser : ProfileFrameKind::kInlined;
    frame.function = std::move(frames[i].function);
    if (frame.function.empty()) frame.function = absl::StrCat("[", state->display, "]");
    if (options_.lines) {
      frame.file = std::move(frames[i].file);
      frame.line = frames[i].line;
    }
    out->push_back(std::move(frame));
  }
  ++named_;
}

void ElfSymbolizer::SymbolizeUnmapped(int32_t pid, uint64_t avma, UnmappedContext context,
                                      std::vector<SymbolizedFrame>* out) {
  if (context == UnmappedContext::kInsideExecve) {
    // Not looked up: a perf map of this pid is the old image's JIT, whose names would be wrong.
    ++unknown_inside_execve_;
    SymbolizedFrame frame;
    frame.function = "[unknown]";
    out->push_back(std::move(frame));
    return;
  }
  ++addresses_;
  auto it = perf_maps_.find(pid);
  if (it == perf_maps_.end()) {
    absl::StatusOr<SymbolTable> table = LoadPerfMap(pid, options_.perf_map_dir);
    std::unique_ptr<SymbolTable> owned;
    if (table.ok()) {
      owned = std::make_unique<SymbolTable>(std::move(*table));
    } else if (!absl::IsNotFound(table.status())) {
      // No map is the common case (no JIT); one that exists but cannot be used deserves a word.
      Warn(absl::StrCat("JIT frames of PID ", pid, " are unnamed: ",
                        EscapeForMessage(table.status().message(), kMaxQuotedPathBytes)));
    }
    it = perf_maps_.emplace(pid, std::move(owned)).first;
  }
  if (it->second != nullptr) {
    if (const SymbolTable::Symbol* symbol = it->second->Lookup(avma); symbol != nullptr) {
      SymbolizedFrame frame;
      frame.function = std::string(it->second->Name(*symbol));
      frame.kind = ProfileFrameKind::kJit;
      out->push_back(std::move(frame));
      ++named_;
      return;
    }
  }
  ++unknown_;
  SymbolizedFrame frame;
  frame.function = "[unknown]";
  out->push_back(std::move(frame));
}

void ElfSymbolizer::SymbolizeKernel(uint64_t avma, std::vector<SymbolizedFrame>* out) {
  ++addresses_;
  if (!kernel_.has_value()) kernel_.emplace(options_.cache);
  SymbolizedFrame frame;
  frame.kind = ProfileFrameKind::kKernel;
  absl::string_view name = kernel_->Lookup(avma);
  if (!name.empty()) {
    frame.function = std::string(name);
    ++named_;
  } else {
    if (!kernel_->status().ok()) {
      Warn(absl::StrCat("kernel frames are unnamed: ", kernel_->status().message()));
    }
    frame.function = "[kernel.kallsyms]";
    ++kernel_unnamed_;
  }
  out->push_back(std::move(frame));
}

SymbolizationStats ElfSymbolizer::Stats() const {
  SymbolizationStats stats;
  stats.addresses = addresses_;
  stats.named = named_;
  for (size_t id = 0; id < states_.size(); ++id) {
    const ModuleState& s = states_[id];
    if (s.unnamed == 0) continue;
    stats.worst_modules.push_back(
        SymbolizationStats::ModuleMiss{modules_.Get(id).path, s.unnamed, s.reason, s.advice});
  }
  if (unknown_ > 0) {
    stats.worst_modules.push_back(SymbolizationStats::ModuleMiss{
        "[unknown]", unknown_,
        "address in no mapped file (JIT code without a perf map, or a broken stack)",
        "build with frame pointers (-fno-omit-frame-pointer); JIT runtimes: write "
        "/tmp/perf-PID.map"});
  }
  if (unknown_inside_execve_ > 0) {
    stats.worst_modules.push_back(SymbolizationStats::ModuleMiss{
        "[unknown]", unknown_inside_execve_,
        "sampled inside execve: the old image is gone, the new one not started", "nothing to fix",
        /*fixable=*/false});
  }
  if (kernel_unnamed_ > 0) {
    stats.worst_modules.push_back(SymbolizationStats::ModuleMiss{
        "[kernel.kallsyms]", kernel_unnamed_, "kernel symbols unavailable",
        "run as root or set kernel.kptr_restrict=0"});
  }
  std::stable_sort(stats.worst_modules.begin(), stats.worst_modules.end(),
                   [](const auto& a, const auto& b) { return a.unnamed > b.unnamed; });
  if (stats.worst_modules.size() > kMaxWorstModules) stats.worst_modules.resize(kMaxWorstModules);
  stats.warnings = warnings_;
  return stats;
}

}  // namespace

bool IsExecveFunction(absl::string_view function) {
  // Compiler clones keep their parent's name before the dot: do_execveat_common.isra.0.
  function = function.substr(0, function.find('.'));
  // The system call's entry under every ABI's prefix (__x64_, __ia32_, __x32_compat_, __arm64_,
  // __se_, __do_), always on a chain that starts in user space; the rest name the exec code
  // itself, for a chain cut short of the entry.
  if (absl::EndsWith(function, "sys_execve") || absl::EndsWith(function, "sys_execveat")) {
    return true;
  }
  static constexpr absl::string_view kExec[] = {
      "do_execveat_common", "do_execve",       "do_execveat",     "bprm_execve",
      "exec_binprm",        "begin_new_exec",  "load_elf_binary", "kernel_execve"};
  return absl::c_linear_search(kExec, function);
}

std::unique_ptr<Symbolizer> MakeSymbolizer(const sampler::ModuleRegistry& modules,
                                           const SymbolizerOptions& options) {
  return std::make_unique<ElfSymbolizer>(modules, options);
}

std::unique_ptr<Symbolizer> MakeMappingAwareSymbolizer(unwind::StackCollector& collector,
                                                       const SymbolizerOptions& options) {
  std::unique_ptr<Symbolizer> symbolizer = MakeSymbolizer(collector.modules(), options);
  Symbolizer* s = symbolizer.get();
  collector.set_mapping_observer([s](const sampler::MmapView& m, sampler::ModuleId module) {
    const auto pid = static_cast<int32_t>(m.pid);
    switch (module::KindOfPath(absl::string_view(m.filename.data(), m.filename.size()))) {
      case module::PathKind::kVdso:
        s->NoteVdso(pid, m.start_avma, m.start_avma + m.length);
        break;
      case module::PathKind::kFile:
      case module::PathKind::kMemfd:
        s->NoteMapping(pid, module, m.start_avma, m.start_avma + m.length);
        break;
      default:
        break;
    }
  });
  collector.set_new_frames_observer(
      [s](absl::Span<const unwind::CollectedFrame> frames) { s->NoteFrames(frames); });
  return symbolizer;
}

}  // namespace nativeprof::symbolize
