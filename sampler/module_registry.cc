#include "sampler/module_registry.h"

#include "absl/strings/str_cat.h"

namespace nativeprof::sampler {

ModuleId ModuleRegistry::Intern(const ModuleInfo& info) {
  std::string key = absl::StrCat(info.path, std::string(1, '\0'), info.build_id,
                                 std::string(1, '\0'), info.dev, ":", info.inode);
  auto [it, inserted] = index_.try_emplace(std::move(key), static_cast<ModuleId>(modules_.size()));
  if (inserted) modules_.push_back(info);
  return it->second;
}

}  // namespace nativeprof::sampler
