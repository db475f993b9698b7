// The processes and threads of a recording: per process its AddressSpace (from MMAP2, reset by
// exec, copied on fork) and per thread its name (from COMM, inherited from the creating thread).
// Drain thread only.
#ifndef NATIVEPROF_SAMPLER_PROCESS_TABLE_H_
#define NATIVEPROF_SAMPLER_PROCESS_TABLE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "sampler/address_space.h"
#include "sampler/module_registry.h"
#include "sampler/records.h"

namespace nativeprof::sampler {

struct Process {
  int32_t pid = 0;
  std::string name;  // comm of the main thread
  AddressSpace address_space;
  absl::flat_hash_map<int32_t, std::string> thread_names;
  bool exited = false;
};

class ProcessTable {
 public:
  explicit ProcessTable(ModuleRegistry* modules) : modules_(modules) {}

  void ApplyMmap(const MmapView& mmap);
  void ApplyComm(const CommView& comm);
  void ApplyTask(const TaskView& task);

  // The process, created empty on first mention (samples can precede every other record of an
  // attached process).
  Process& GetOrCreate(int32_t pid);
  const Process* Find(int32_t pid) const;

  // Name of a thread: its own COMM, else its process's name, else "[pid]".
  const std::string& ThreadName(const Process& process, int32_t tid) const;

  size_t process_count() const { return processes_.size(); }
  size_t thread_count() const { return threads_seen_; }
  const absl::flat_hash_map<int32_t, std::unique_ptr<Process>>& processes() const {
    return processes_;
  }

 private:
  ModuleRegistry* modules_;
  absl::flat_hash_map<int32_t, std::unique_ptr<Process>> processes_;
  size_t threads_seen_ = 0;
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_PROCESS_TABLE_H_
