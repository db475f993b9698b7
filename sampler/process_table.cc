#include "sampler/process_table.h"

#include <sys/mman.h>
#include <sys/sysmacros.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace nativeprof::sampler {

Process& ProcessTable::GetOrCreate(int32_t pid) {
  auto [it, inserted] = processes_.try_emplace(pid);
  if (inserted) {
    it->second = std::make_unique<Process>();
    it->second->pid = pid;
    tids_seen_.insert(pid);
  }
  return *it->second;
}

const Process* ProcessTable::Find(int32_t pid) const {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : it->second.get();
}

std::string ProcessTable::ThreadName(int32_t pid, int32_t tid) const {
  const Process* p = Find(pid);
  return p != nullptr ? ThreadName(*p, tid) : std::string();
}

const std::string& ProcessTable::ThreadName(const Process& process, int32_t tid) const {
  auto it = process.thread_names.find(tid);
  if (it != process.thread_names.end()) return it->second;
  if (!process.name.empty()) return process.name;
  // No COMM seen for this process yet (attached, or its records were lost).
  auto [pit, inserted] = placeholder_names_.try_emplace(process.pid);
  if (inserted) pit->second = absl::StrCat("[", process.pid, "]");
  return pit->second;
}

ModuleId ProcessTable::ApplyMmap(const MmapView& m) {
  // Data mappings cannot hold sampled code; anonymous executable memory (JIT) is kept so its
  // addresses resolve to "no module" rather than to a stale file mapping.
  if (!m.executable && !(m.prot & PROT_EXEC)) return kNoModule;
  Process& p = GetOrCreate(static_cast<int32_t>(m.pid));
  ModuleInfo info;
  info.path = std::string(m.filename);
  info.build_id = absl::BytesToHexString(absl::string_view(
      reinterpret_cast<const char*>(m.build_id.data()), m.build_id.size()));
  info.dev = makedev(m.dev_major, m.dev_minor);
  info.inode = m.inode;
  info.first_pid = static_cast<int32_t>(m.pid);
  Mapping mapping;
  mapping.start_avma = m.start_avma;
  mapping.end_avma = m.start_avma + m.length;
  mapping.file_offset = m.file_offset;
  mapping.prot = m.prot;
  mapping.module = modules_->Intern(info);
  p.address_space.Map(mapping);
  return mapping.module;
}

void ProcessTable::ApplyComm(const CommView& c) {
  Process& p = GetOrCreate(static_cast<int32_t>(c.pid));
  if (c.exec) {
    // execve replaces the image and leaves only the calling thread.
    p.address_space.Clear();
    p.thread_names.clear();
    p.exited = false;
    p.exec_ns = c.time_ns;
  }
  if (c.pid == c.tid) p.name = std::string(c.comm);
  tids_seen_.insert(static_cast<int32_t>(c.tid));
  p.thread_names[static_cast<int32_t>(c.tid)] = std::string(c.comm);
}

void ProcessTable::ApplyTask(const TaskView& t) {
  if (t.exit) {
    auto it = processes_.find(static_cast<int32_t>(t.pid));
    if (t.pid == t.tid && it != processes_.end()) it->second->exited = true;
    return;
  }
  if (t.pid == t.ppid) {
    // A new thread: it starts with the name of the thread that created it.
    Process& p = GetOrCreate(static_cast<int32_t>(t.pid));
    auto creator = p.thread_names.find(static_cast<int32_t>(t.ptid));
    std::string name = creator != p.thread_names.end() ? creator->second : p.name;
    // Without a known name the thread keeps falling back to the process's (or "[pid]").
    if (!name.empty()) p.thread_names[static_cast<int32_t>(t.tid)] = std::move(name);
    tids_seen_.insert(static_cast<int32_t>(t.tid));
    return;
  }
  // A new process: fork copies the parent's address space and names.
  const Process* parent = Find(static_cast<int32_t>(t.ppid));
  Process& child = GetOrCreate(static_cast<int32_t>(t.pid));
  if (parent != nullptr && parent != &child) {
    child.address_space = parent->address_space;
    auto forker = parent->thread_names.find(static_cast<int32_t>(t.ptid));
    child.name = forker != parent->thread_names.end() ? forker->second : parent->name;
    child.thread_names.clear();
  }
  child.exited = false;
}

}  // namespace nativeprof::sampler
