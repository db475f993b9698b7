#include "unwind/module_files.h"

#include "base/logging.h"
#include "module/module_opener.h"
#include "module/module_path.h"
#include "module/vdso.h"

namespace nativeprof::unwind {

std::unique_ptr<ElfCfi> ModuleFiles::OpenModule(const sampler::Mapping& mapping,
                                                const ProcessView& process) {
  const sampler::ModuleInfo& info = process.modules->Get(mapping.module);
  if (info.is_kernel) return nullptr;
  absl::StatusOr<std::unique_ptr<module::ElfImage>> image =
      absl::InvalidArgumentError("no ELF image");
  switch (module::KindOfPath(info.path)) {
    case module::PathKind::kNoFile:
      return nullptr;
    case module::PathKind::kVdso: {
      absl::StatusOr<std::string> bytes =
          module::ReadVdsoImage(process.pid, mapping.start_avma, mapping.end_avma);
      if (!bytes.ok()) return nullptr;
      image = module::ElfImage::FromBytes(*std::move(bytes), "[vdso]");
      break;
    }
    case module::PathKind::kFile:
    case module::PathKind::kMemfd:
      image = module::OpenModuleImage(module::ModuleRequest{.info = &info,
                                                            .pid = process.pid,
                                                            .start_avma = mapping.start_avma,
                                                            .end_avma = mapping.end_avma});
      break;
  }
  if (!image.ok()) {
    SPDLOG_LOGGER_DEBUG(Logger("unwind"), "cannot open {} for unwinding: {}", info.path,
                        image.status().ToString());
    return nullptr;
  }
  auto cfi = ElfCfi::FromImage(*std::move(image), debug_dirs_);
  return cfi.ok() ? *std::move(cfi) : nullptr;
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
