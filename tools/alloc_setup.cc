#include "tools/alloc_setup.h"

#include <elf.h>
#include <gelf.h>
#include <glob.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/text_escape.h"
#include "module/elf_image.h"
#include "output/library_frames.h"
#include "sampler/alloc_channel_layout.h"
#include "symbolize/symbol_table.h"

namespace nativeprof::tools {
namespace {

bool IsFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string SelfDirectory() {
  const std::string self = ReadLinkOrEmpty("/proc/self/exe");
  return self.empty() ? "" : DirectoryOf(self);
}

// The directories ld.so.conf at `path` lists, its `include` globs followed (as ldconfig reads
// them to build ld.so.cache), at most 8 levels deep.
std::vector<std::string> LoaderConfigDirectories(const std::string& path, int depth) {
  std::vector<std::string> dirs;
  absl::StatusOr<std::string> text = ReadSmallFile(path, size_t{1} << 20);
  if (!text.ok() || depth > 8) return dirs;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    if (absl::ConsumePrefix(&line, "include")) {
      line = absl::StripAsciiWhitespace(line);
      const std::string pattern =
          line.front() == '/' ? std::string(line) : absl::StrCat(DirectoryOf(path), "/", line);
      glob_t matches{};
      if (::glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
        for (size_t i = 0; i < matches.gl_pathc; ++i) {
          for (std::string& d : LoaderConfigDirectories(matches.gl_pathv[i], depth + 1)) {
            dirs.push_back(std::move(d));
          }
        }
      }
      ::globfree(&matches);
    } else if (line.front() == '/') {
      dirs.emplace_back(line);
    }
  }
  return dirs;
}

// Whether `elf` exports a function named one of `names`.
bool DefinesAnyOf(const module::ElfImage& elf, std::initializer_list<absl::string_view> names) {
  bool defines = false;
  symbolize::ForEachElfFunctionSymbol(
      elf, ".dynsym",
      [&](absl::string_view name, uint64_t, uint64_t, symbolize::SymbolTable::Binding,
          uint64_t) { defines = defines || absl::c_linear_search(names, name); });
  return defines;
}

// Whether `elf` defines malloc or free (ReplacesAllocator). Not operator new: libstdc++ defines
// it (over malloc), and so may a program (over a pool of its own) whose malloc still reaches the
// hooks.
bool DefinesMalloc(const module::ElfImage& elf) { return DefinesAnyOf(elf, {"malloc", "free"}); }

// What the loader reads from a dynamic section: the libraries `image` needs, in order, and the
// directories its DT_RUNPATH or else its DT_RPATH names, $ORIGIN expanded to `origin`.
struct DynamicDeps {
  std::vector<std::string> needed;
  LibrarySearchPath search;
};

DynamicDeps ReadDynamicDeps(const module::ElfImage& image, const std::string& origin) {
  DynamicDeps deps;
  GElf_Shdr shdr;
  Elf_Scn* scn = image.FindSection(".dynamic", &shdr);
  if (scn == nullptr || shdr.sh_type != SHT_DYNAMIC || shdr.sh_entsize == 0) return deps;
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr) return deps;
  std::string runpath, rpath;
  const size_t count = shdr.sh_size / shdr.sh_entsize;
  for (size_t i = 0; i < count; ++i) {
    GElf_Dyn dyn;
    if (gelf_getdyn(data, static_cast<int>(i), &dyn) == nullptr || dyn.d_tag == DT_NULL) break;
    if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH) continue;
    const char* text = elf_strptr(image.elf(), shdr.sh_link, dyn.d_un.d_val);
    if (text == nullptr || *text == '\0') continue;
    if (dyn.d_tag == DT_NEEDED) {
      deps.needed.emplace_back(text);
    } else {
      (dyn.d_tag == DT_RUNPATH ? runpath : rpath) = text;
    }
  }
  std::vector<std::string>& dirs = runpath.empty() ? deps.search.rpath : deps.search.runpath;
  for (absl::string_view dir :
       absl::StrSplit(runpath.empty() ? rpath : runpath, ':', absl::SkipEmpty())) {
    dirs.push_back(absl::StrReplaceAll(dir, {{"${ORIGIN}", origin}, {"$ORIGIN", origin}}));
  }
  return deps;
}

absl::Status CheckOwnAllocator(const std::string& path, const module::ElfImage& elf);

}  // namespace

absl::StatusOr<std::string> FindAllocPreload() {
  if (const char* env = std::getenv("NATIVEPROF_ALLOC_LIB"); env != nullptr && *env != '\0') {
    if (IsFile(env)) return std::string(env);
    return absl::NotFoundError(absl::StrCat("NATIVEPROF_ALLOC_LIB names ", env,
                                            ", which is not a file"));
  }
  const std::string dir = SelfDirectory();
  const std::string beside = absl::StrCat(dir, "/", kAllocPreloadName);
  if (IsFile(beside)) return beside;
  const std::string installed = absl::StrCat(dir, "/../lib/nativeprof/", kAllocPreloadName);
  if (IsFile(installed)) return installed;
  return absl::NotFoundError(absl::StrCat(
      "--alloc needs ", kAllocPreloadName, ", found neither in ", dir, " nor in ", dir,
      "/../lib/nativeprof; reinstall nativeprof or set NATIVEPROF_ALLOC_LIB to its path"));
}

absl::Status CheckInterposable(const std::string& path) {
  // One reading of the file serves both checks.
  absl::StatusOr<std::unique_ptr<module::ElfImage>> elf = module::ElfImage::Open(path);
  if (!elf.ok() || gelf_getclass((*elf)->elf()) != ELFCLASS64) {
    return absl::OkStatus();  // a script, or not something this check understands
  }
  size_t phnum = 0;
  if (elf_getphdrnum((*elf)->elf(), &phnum) != 0) return absl::OkStatus();
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr((*elf)->elf(), static_cast<int>(i), &ph) == nullptr) break;
    if (ph.p_type == PT_INTERP) return CheckOwnAllocator(path, **elf);
  }
  GElf_Shdr shdr;
  // A Go program is static and allocates on Go's own heap: no link option brings it to malloc.
  if ((*elf)->FindSection(".go.buildinfo", &shdr) != nullptr ||
      (*elf)->FindSection(".gopclntab", &shdr) != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " is a Go program: it is statically linked and allocates on Go's own heap, which "
        "--alloc cannot see; record it without --alloc, and use Go's heap profile "
        "(runtime/pprof) for its allocations"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      path, " is statically linked, so its malloc cannot be interposed and --alloc would see no "
      "allocations; link it dynamically (drop -static, or use a glibc target instead of musl)"));
}

absl::StatusOr<sampler::AllocChannel> CreateAllocChannel(uint64_t rate_bytes,
                                                         uint32_t stack_bytes) {
  // A sample is ~1 KiB once its thread has a stack hint, but a thread's first ones copy the whole
  // stack_bytes: the ring holds at least 64 of those, and no less than 1 MiB. Sampling every
  // allocation writes ~1 GB/s, and what the profiler reads younger than
  // RecordSorter::kInFlightNs stays in the ring for the next drain: 16 MiB holds ~15 ms of it.
  size_t ring_bytes = rate_bytes <= 1 ? size_t{16} << 20 : size_t{1} << 20;
  while (ring_bytes < 64 * (size_t{stack_bytes} + 512) && ring_bytes < (size_t{64} << 20)) {
    ring_bytes *= 2;
  }
  std::string dir = "/dev/shm";
  if (::access(dir.c_str(), W_OK) != 0) {
    const char* tmp = std::getenv("TMPDIR");
    dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  return sampler::AllocChannel::Create(dir, rate_bytes, ring_bytes);
}

bool ReplacesAllocator(const std::string& path) {
  absl::StatusOr<std::unique_ptr<module::ElfImage>> elf = module::ElfImage::Open(path);
  return elf.ok() && DefinesMalloc(**elf);
}

std::string ResolvePreloadEntry(const std::string& entry) { return ResolveLibrary(entry, {}); }

std::string ResolveLibrary(const std::string& entry, const LibrarySearchPath& search) {
  if (entry.find('/') != std::string::npos) return IsFile(entry) ? entry : "";
  // The loader's order: DT_RPATH (of an object without DT_RUNPATH), LD_LIBRARY_PATH,
  // DT_RUNPATH, then the directories ld.so.cache was built from (/etc/ld.so.conf) and the
  // defaults.
  std::vector<std::string> dirs = search.rpath;
  if (const char* path = std::getenv("LD_LIBRARY_PATH"); path != nullptr) {
    for (absl::string_view d : absl::StrSplit(path, absl::ByAnyChar(":;"), absl::SkipEmpty())) {
      dirs.emplace_back(d);
    }
  }
  dirs.insert(dirs.end(), search.runpath.begin(), search.runpath.end());
  static const std::vector<std::string> kConfigured =
      LoaderConfigDirectories("/etc/ld.so.conf", 0);
  dirs.insert(dirs.end(), kConfigured.begin(), kConfigured.end());
#if defined(__x86_64__)
  constexpr absl::string_view kMultiarch = "x86_64-linux-gnu";
#elif defined(__aarch64__)
  constexpr absl::string_view kMultiarch = "aarch64-linux-gnu";
#else
  constexpr absl::string_view kMultiarch = "";
#endif
  if (!kMultiarch.empty()) {
    dirs.push_back(absl::StrCat("/lib/", kMultiarch));
    dirs.push_back(absl::StrCat("/usr/lib/", kMultiarch));
  }
  for (const char* d : {"/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib"}) {
    dirs.emplace_back(d);
  }
  for (const std::string& d : dirs) {
    const std::string candidate = absl::StrCat(d, "/", entry);
    if (IsFile(candidate)) return candidate;
  }
  return "";
}

std::vector<std::pair<std::string, std::string>> AllocEnvironment(
    const std::string& preload, const sampler::AllocChannel& channel,
    std::vector<std::string>* notes) {
  std::string ld_preload = preload;
  if (const char* user = std::getenv("LD_PRELOAD"); user != nullptr && *user != '\0') {
    // The loader splits LD_PRELOAD at spaces and colons.
    for (absl::string_view entry : absl::StrSplit(user, absl::ByAnyChar(" :"), absl::SkipEmpty())) {
      const std::string resolved = ResolvePreloadEntry(std::string(entry));
      if (!resolved.empty() && ReplacesAllocator(resolved)) {
        notes->push_back(absl::StrCat(
            "LD_PRELOAD's ", EscapeForMessage(entry),
            " replaces malloc: left out of this run, so that --alloc sees every allocation (the "
            "program runs on glibc's malloc); record without --alloc to profile it on that "
            "allocator"));
        continue;
      }
      absl::StrAppend(&ld_preload, ":", entry);
    }
  }
  return {{"LD_PRELOAD", ld_preload}, {alloc_channel::kEnvChannel, channel.path()}};
}

namespace {

// A dynamically linked program whose malloc is not glibc's, refused: one that defines malloc
// itself (a statically linked jemalloc or sanitizer runtime), whose malloc comes before the
// library's, which never sees a call; one that links a sanitizer runtime, which does not start
// with another library before it; and one that links an allocator (libjemalloc, libtcmalloc).
// The library forwards to that allocator (preload/allocator_backend.h), but the allocator hands
// out blocks of its own too (its operator new), which come to the library's free and
// malloc_usable_size: the header check that tells glibc's blocks from the library's cannot tell
// them apart for certain (the bytes in front of such a block are another block's), and its sized
// delete of an over-aligned block goes to the allocator with the library's pointer.
absl::Status CheckOwnAllocator(const std::string& path, const module::ElfImage& elf) {
  constexpr absl::string_view kFix =
      "; record it without --alloc, or build it without that allocator";
  if (DefinesMalloc(elf)) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " defines malloc itself (a statically linked allocator or sanitizer runtime), so "
        "--alloc cannot interpose it and would see none of its allocations", kFix));
  }
  // The libraries the program needs and theirs, breadth first as the loader loads them, each
  // resolved through the RUNPATH of the object that needs it. Bounded: a program with a deep
  // tree is checked as far as the bound, which its allocator is nearly always within.
  constexpr size_t kMaxLibraries = 256;
  // $ORIGIN is the directory of the file the loader opened, links resolved (/proc/self/exe).
  auto origin = [](const std::string& file) {
    char resolved[PATH_MAX];
    return DirectoryOf(::realpath(file.c_str(), resolved) != nullptr ? resolved : file);
  };
  std::vector<std::pair<std::string, DynamicDeps>> queue;  // (object, what it needs)
  queue.emplace_back(path, ReadDynamicDeps(elf, origin(path)));
  absl::flat_hash_set<std::string> seen;
  for (size_t next = 0; next < queue.size() && seen.size() < kMaxLibraries; ++next) {
    const DynamicDeps deps = queue[next].second;  // a copy: the queue grows below
    for (const std::string& needed : deps.needed) {
      if (output::IsRuntimeLibraryModule(needed) || !seen.insert(needed).second) continue;
      const std::string lib = ResolveLibrary(needed, deps.search);
      if (lib.empty()) continue;
      absl::StatusOr<std::unique_ptr<module::ElfImage>> image = module::ElfImage::Open(lib);
      if (!image.ok()) continue;
      if (DefinesMalloc(**image)) {
        const std::string links = absl::StrCat(
            path, " links ", needed,
            next == 0 ? "" : absl::StrCat(" (through ", BaseNameOf(queue[next].first), ")"));
        if (DefinesAnyOf(**image, {"__asan_init", "__hwasan_init", "__tsan_init", "__msan_init",
                                   "__lsan_init"})) {
          return absl::FailedPreconditionError(absl::StrCat(
              links, ", a sanitizer runtime, which must come first in the process, where "
              "--alloc puts its library; record it without --alloc, or a build without "
              "-fsanitize"));
        }
        return absl::FailedPreconditionError(absl::StrCat(
            links, ", which replaces malloc: the blocks it hands out by itself (its operator "
            "new's) cannot be told from --alloc's for certain", kFix));
      }
      queue.emplace_back(lib, ReadDynamicDeps(**image, origin(lib)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

}  // namespace nativeprof::tools
