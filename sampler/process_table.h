// The processes and threads of a recording: per process its AddressSpace (from MMAP2, reset by
// exec, copied on fork) and per thread its name (from COMM, inherited from the creating thread).
// Drain thread only.
#ifndef NATIVEPROF_SAMPLER_PROCESS_TABLE_H_
#define NATIVEPROF_SAMPLER_PROCESS_TABLE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
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
  uint64_t exec_ns = 0;  // time of the exec that started its current image; 0: none recorded
};

class ProcessTable {
 public:
  explicit ProcessTable(ModuleRegistry* modules) : modules_(modules) {}

  // Returns the module the mapping was interned as, or kNoModule when it was ignored (data).
  ModuleId ApplyMmap(const MmapView& mmap);
  void ApplyComm(const CommView& comm);
  void ApplyTask(const TaskView& task);

  // Notes that thread `tid` exists (for thread_count()).
  void NoteThread(int32_t tid) { tids_seen_.insert(tid); }
  // Takes back a thread noted that had ended before recording began (a main thread that called
  // pthread_exit, listed as a zombie when `-p` attached): it gave its process a name, not a
  // thread to count.
  void ForgetThread(int32_t tid) { tids_seen_.erase(tid); }

  // The process, created empty on first mention (samples can precede every other record of an
  // attached process).
  Process& GetOrCreate(int32_t pid);
  const Process* Find(int32_t pid) const;

  // Name of a thread: its own COMM, else its process's name, else "[pid]".
  const std::string& ThreadName(const Process& process, int32_t tid) const;
  // The same by pid; "" for a process no record mentioned.
  std::string ThreadName(int32_t pid, int32_t tid) const;

  size_t process_count() const { return processes_.size(); }
  // Distinct processes / threads mentioned by any record (exited ones included).
  size_t thread_count() const { return tids_seen_.size(); }
  const absl::flat_hash_map<int32_t, std::unique_ptr<Process>>& processes() const {
    return processes_;
  }

 private:
  ModuleRegistry* modules_;
  absl::flat_hash_map<int32_t, std::unique_ptr<Process>> processes_;
  // "[pid]" names handed out by ThreadName for processes without a COMM yet. Node-based so the
  // returned references stay valid as more are added.
  mutable absl::node_hash_map<int32_t, std::string> placeholder_names_;
  absl::flat_hash_set<int32_t> tids_seen_;
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_PROCESS_TABLE_H_
