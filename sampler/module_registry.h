// Interns mapped files ("modules") so each is identified by a small ModuleId shared by every
// process that maps it. Symbolizers and unwinders cache per ModuleId. Owned by the drain thread.
#ifndef NATIVEPROF_SAMPLER_MODULE_REGISTRY_H_
#define NATIVEPROF_SAMPLER_MODULE_REGISTRY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "sampler/address_space.h"

namespace nativeprof::sampler {

struct ModuleInfo {
  std::string path;      // as the kernel reported it ("[vdso]", "//anon" and "[heap]" included)
  std::string build_id;  // lower-case hex; empty when the kernel did not send one
  uint64_t dev = 0;      // makedev(major, minor)
  uint64_t inode = 0;
  // A pid that mapped it, for reading it through /proc/PID/map_files or /proc/PID/root when the
  // path is gone or in another mount namespace.
  int32_t first_pid = 0;
  bool is_kernel = false;  // [kernel.kallsyms] and kernel modules
};

class ModuleRegistry {
 public:
  // Returns the id for this file, adding it on first sight.
  ModuleId Intern(const ModuleInfo& info);
  const ModuleInfo& Get(ModuleId id) const { return modules_[id]; }
  size_t size() const { return modules_.size(); }

 private:
  std::vector<ModuleInfo> modules_;
  absl::flat_hash_map<std::string, ModuleId> index_;  // key: path \0 build_id \0 dev \0 inode
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_MODULE_REGISTRY_H_
