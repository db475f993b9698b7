#include "unwind/module_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/errno_status.h"
#include "base/file_util.h"
#include "base/logging.h"

namespace nativeprof::unwind {
namespace {

constexpr uint64_t kMaxVdsoSize = 1 << 20;

absl::StatusOr<std::string> ReadProcMem(int32_t pid, uint64_t start, uint64_t size) {
  ScopedFd fd(open(absl::StrCat("/proc/", pid, "/mem").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open /proc/PID/mem");
  std::string image(size, '\0');
  const ssize_t n = pread(fd.get(), image.data(), size, static_cast<off_t>(start));
  if (n != static_cast<ssize_t>(size)) return ErrnoError("read vdso from /proc/PID/mem");
  return image;
}

}  // namespace

bool ModuleFiles::IsAnonymous(const std::string& path) {
  if (path.empty() || absl::StartsWith(path, "//anon") || absl::StartsWith(path, "/memfd:")) {
    return true;
  }
  return path[0] == '[' && path != "[vdso]";
}

absl::StatusOr<std::string> ReadVdsoImage(int32_t pid, uint64_t start, uint64_t end) {
  if (end > start && end - start <= kMaxVdsoSize && pid > 0) {
    auto image = ReadProcMem(pid, start, end - start);
    if (image.ok()) return image;
  }
  // Our own vdso: same kernel, same image.
  auto maps = ReadSmallFile("/proc/self/maps");
  if (maps.ok()) {
    for (absl::string_view line : absl::StrSplit(*maps, '\n')) {
      if (!absl::EndsWith(line, "[vdso]")) continue;
      std::vector<absl::string_view> range = absl::StrSplit(line.substr(0, line.find(' ')), '-');
      uint64_t s = 0, e = 0;
      if (range.size() != 2 || !absl::SimpleHexAtoi(range[0], &s) ||
          !absl::SimpleHexAtoi(range[1], &e) || e <= s || e - s > kMaxVdsoSize) {
        break;
      }
      return std::string(reinterpret_cast<const char*>(s), e - s);
    }
  }
  return absl::NotFoundError("no vdso image");
}

std::unique_ptr<ElfCfi> ModuleFiles::OpenModule(const sampler::Mapping& mapping,
                                                const ProcessView& process) {
  const sampler::ModuleInfo& info = process.modules->Get(mapping.module);
  if (info.is_kernel || IsAnonymous(info.path)) return nullptr;
  if (info.path == "[vdso]") {
    auto image = ReadVdsoImage(process.pid, mapping.start_avma, mapping.end_avma);
    if (!image.ok()) return nullptr;
    auto m = ElfCfi::FromImage(*std::move(image));
    return m.ok() ? *std::move(m) : nullptr;
  }
  std::string path(absl::StripSuffix(info.path, " (deleted)"));
  std::vector<std::string> candidates = {path};
  if (info.first_pid > 0) candidates.push_back(absl::StrCat("/proc/", info.first_pid, "/root", path));
  if (process.pid > 0) {
    candidates.push_back(absl::StrFormat("/proc/%d/map_files/%x-%x", process.pid,
                                         mapping.start_avma, mapping.end_avma));
  }
  absl::Status last;
  for (const std::string& c : candidates) {
    auto m = ElfCfi::Open(c, info.build_id);
    if (m.ok()) return *std::move(m);
    last = m.status();
  }
  SPDLOG_LOGGER_DEBUG(Logger("unwind"), "cannot open {} for unwinding: {}", info.path,
                      last.ToString());
  return nullptr;
}

ElfCfi* ModuleFiles::GetSlow(const sampler::Mapping& mapping, const ProcessView& process) {
  // Only ids of `process.modules` get a slot, so by_id_ stays as small as the registry.
  if (mapping.module == sampler::kNoModule || process.modules == nullptr ||
      mapping.module >= process.modules->size()) {
    return nullptr;
  }
  auto it = modules_.find(mapping.module);
  if (it == modules_.end()) {
    it = modules_.emplace(mapping.module, OpenModule(mapping, process)).first;
  }
  if (mapping.module >= by_id_.size()) by_id_.resize(mapping.module + 1);
  by_id_[mapping.module] = {it->second.get(), true};
  return it->second.get();
}

CfiCacheStats ModuleFiles::TotalStats() const {
  CfiCacheStats total;
  for (const auto& [id, m] : modules_) {
    if (m == nullptr) continue;
    total.hits += m->stats().hits;
    total.misses += m->stats().misses;
    total.range_hits += m->stats().range_hits;
    total.fast_rules += m->stats().fast_rules;
    total.expr_rules += m->stats().expr_rules;
    total.no_cfi += m->stats().no_cfi;
  }
  return total;
}

}  // namespace nativeprof::unwind
