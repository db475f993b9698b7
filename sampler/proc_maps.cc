#include "sampler/proc_maps.h"

#include <dirent.h>
#include <sys/mman.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file_util.h"
#include "base/scheduling.h"
#include "base/text_escape.h"
#include "sampler/build_id_reader.h"

namespace nativeprof::sampler {
namespace {

bool ParseHex(absl::string_view s, uint64_t* out) { return absl::SimpleHexAtoi(s, out); }

}  // namespace

absl::StatusOr<std::vector<ProcMapsEntry>> ParseProcMaps(absl::string_view text) {
  std::vector<ProcMapsEntry> entries;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    ++number;
    // start-end perms offset dev inode [path]; the path may contain spaces.
    std::vector<absl::string_view> f =
        absl::StrSplit(line, absl::MaxSplits(' ', 5), absl::SkipEmpty());
    if (f.size() < 5) {
      return absl::DataLossError(
          absl::StrCat("malformed maps line ", number, ": ", EscapeForMessage(line)));
    }
    ProcMapsEntry e;
    std::pair<absl::string_view, absl::string_view> range = absl::StrSplit(f[0], '-');
    std::pair<absl::string_view, absl::string_view> dev = absl::StrSplit(f[3], ':');
    uint64_t major = 0, minor = 0;
    if (!ParseHex(range.first, &e.start_avma) || !ParseHex(range.second, &e.end_avma) ||
        !ParseHex(f[2], &e.file_offset) || !ParseHex(dev.first, &major) ||
        !ParseHex(dev.second, &minor) || !absl::SimpleAtoi(f[4], &e.inode) || f[1].size() < 4 ||
        e.end_avma <= e.start_avma) {  // a mapping's length is end - start: never 0 or wrapped
      return absl::DataLossError(
          absl::StrCat("malformed maps line ", number, ": ", EscapeForMessage(line)));
    }
    e.dev_major = static_cast<uint32_t>(major);
    e.dev_minor = static_cast<uint32_t>(minor);
    if (f[1][0] == 'r') e.prot |= PROT_READ;
    if (f[1][1] == 'w') e.prot |= PROT_WRITE;
    if (f[1][2] == 'x') e.prot |= PROT_EXEC;
    e.shared = f[1][3] == 's';
    if (f.size() == 6) e.path = std::string(absl::StripLeadingAsciiWhitespace(f[5]));
    entries.push_back(std::move(e));
  }
  return entries;
}

absl::StatusOr<std::vector<ProcMapsEntry>> ReadProcMaps(pid_t pid) {
  // A process may have up to vm.max_map_count mappings (65530 by default, often raised), each
  // line up to a path's length: more than ReadSmallFile's default allows.
  absl::StatusOr<std::string> text =
      ReadSmallFile(absl::StrCat("/proc/", pid, "/maps"), size_t{1} << 30);
  if (!text.ok()) return text.status();
  if (text->empty()) {
    // A main thread that ended with pthread_exit is a zombie whose maps read empty while the
    // process's other threads run: any of theirs holds the process's mappings.
    absl::StatusOr<std::vector<pid_t>> tids = ListThreads(pid);
    for (size_t i = 0; tids.ok() && i < tids->size() && text->empty(); ++i) {
      absl::StatusOr<std::string> task = ReadSmallFile(
          absl::StrCat("/proc/", pid, "/task/", (*tids)[i], "/maps"), size_t{1} << 30);
      if (task.ok()) *text = *std::move(task);
    }
  }
  return ParseProcMaps(*text);
}

absl::StatusOr<std::vector<pid_t>> ListThreads(pid_t pid) {
  std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return absl::NotFoundError(absl::StrCat("no process with PID ", pid));
  std::vector<pid_t> tids;
  while (dirent* entry = ::readdir(d)) {
    int tid = 0;
    if (absl::SimpleAtoi(entry->d_name, &tid) && tid > 0) tids.push_back(tid);
  }
  ::closedir(d);
  std::sort(tids.begin(), tids.end());
  if (tids.empty()) return absl::NotFoundError(absl::StrCat("no process with PID ", pid));
  return tids;
}

absl::StatusOr<char> ThreadStateLetter(pid_t pid, pid_t tid) {
  absl::StatusOr<std::string> stat =
      ReadSmallFile(absl::StrCat("/proc/", pid, "/task/", tid, "/stat"));
  if (!stat.ok()) return stat.status();
  // "PID (COMM) STATE ...": a name may hold ") ", so the state follows the last ')'.
  const size_t close = stat->rfind(')');
  if (close == std::string::npos || close + 2 >= stat->size()) {
    // Not a code a failed read gives (ErrnoToStatus): ThreadHasEnded tells them apart.
    return absl::DataLossError(absl::StrCat("no state in /proc/", pid, "/task/", tid, "/stat"));
  }
  return (*stat)[close + 2];
}

bool ThreadHasEnded(pid_t pid, pid_t tid) {
  const absl::StatusOr<char> state = ThreadStateLetter(pid, tid);
  if (!state.ok()) return !absl::IsDataLoss(state.status());  // gone, or unreadable
  return *state == 'Z' || *state == 'X';
}

bool ProcessHasEnded(pid_t pid) {
  absl::StatusOr<std::vector<pid_t>> tids = ListThreads(pid);
  if (!tids.ok()) return true;
  if (tids->size() > 1) return false;
  return ThreadHasEnded(pid, pid);
}

namespace {

// The value of the line of /proc/TID/status that starts with `key` (e.g. "Tgid:"), whitespace
// trimmed.
absl::StatusOr<std::string> ReadStatusField(pid_t tid, absl::string_view key) {
  absl::StatusOr<std::string> status = ReadSmallFile(absl::StrCat("/proc/", tid, "/status"));
  if (!status.ok()) return absl::NotFoundError(absl::StrCat("no process with PID ", tid));
  for (absl::string_view line : absl::StrSplit(*status, '\n')) {
    if (absl::ConsumePrefix(&line, key)) return std::string(absl::StripAsciiWhitespace(line));
  }
  return absl::InvalidArgumentError(absl::StrCat("/proc/", tid, "/status has no ", key, " line"));
}

}  // namespace

absl::StatusOr<pid_t> ProcessOfThread(pid_t tid) {
  absl::StatusOr<std::string> tgid_text = ReadStatusField(tid, "Tgid:");
  if (!tgid_text.ok()) return tgid_text.status();
  int tgid = 0;
  if (!absl::SimpleAtoi(*tgid_text, &tgid) || tgid <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("/proc/", tid, "/status has no Tgid line"));
  }
  return static_cast<pid_t>(tgid);
}

absl::StatusOr<pid_t> PidInOwnNamespace(pid_t pid) {
  absl::StatusOr<std::string> ns_pids = ReadStatusField(pid, "NSpid:");
  if (!ns_pids.ok()) return ns_pids.status();
  // Outermost first: "NSpid:\t4242\t1" for pid 1 of a container.
  const size_t last = ns_pids->find_last_of(" \t");
  int inner = 0;
  if (!absl::SimpleAtoi(last == std::string::npos ? *ns_pids : ns_pids->substr(last + 1),
                        &inner) ||
      inner <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("/proc/", pid, "/status has an unreadable NSpid line"));
  }
  return static_cast<pid_t>(inner);
}

absl::StatusOr<std::string> ReadThreadComm(pid_t pid, pid_t tid) {
  absl::StatusOr<std::string> comm =
      ReadSmallFile(absl::StrCat("/proc/", pid, "/task/", tid, "/comm"));
  if (!comm.ok()) return comm.status();
  return std::string(absl::StripTrailingAsciiWhitespace(*comm));
}

void SynthesizeProcessState(pid_t pid, const std::vector<ProcMapsEntry>& entries,
                            RecordSink& sink) {
  absl::StatusOr<std::vector<pid_t>> tids = ListThreads(pid);
  // The main thread first, so the process gets its name before its threads.
  std::vector<pid_t> order = {pid};
  if (tids.ok()) {
    for (pid_t t : *tids) {
      if (t != pid) order.push_back(t);
    }
  }
  for (pid_t tid : order) {
    absl::StatusOr<std::string> name = ReadThreadComm(pid, tid);
    if (!name.ok()) continue;
    CommView c;
    c.pid = static_cast<uint32_t>(pid);
    c.tid = static_cast<uint32_t>(tid);
    c.comm = *name;
    sink.OnComm(c);
  }
  for (const ProcMapsEntry& e : entries) {
    if (!(e.prot & PROT_EXEC)) continue;
    std::vector<uint8_t> build_id;
    if (!e.path.empty() && e.path[0] == '/') {
      // Through map_files the mapped file is readable even if it was deleted or lives in
      // another mount namespace.
      build_id = ReadElfBuildId(
          absl::StrFormat("/proc/%d/map_files/%x-%x", pid, e.start_avma, e.end_avma));
      if (build_id.empty()) build_id = ReadElfBuildId(e.path);
    }
    MmapView m;
    m.pid = static_cast<uint32_t>(pid);
    m.tid = static_cast<uint32_t>(pid);
    m.start_avma = e.start_avma;
    m.length = e.end_avma - e.start_avma;
    // As the kernel's own MMAP2 records give it: an anonymous mapping's offset is its start
    // address (its vm_pgoff), where /proc/PID/maps prints 0. JIT code in it is then looked up
    // in the perf map by address, whichever of the two described the mapping.
    const bool anonymous = e.path.empty() || absl::StartsWith(e.path, "[anon:");
    m.file_offset = anonymous ? e.start_avma : e.file_offset;
    m.dev_major = e.dev_major;
    m.dev_minor = e.dev_minor;
    m.inode = e.inode;
    m.prot = e.prot;
    m.flags = e.shared ? MAP_SHARED : MAP_PRIVATE;
    m.build_id = build_id;
    m.filename = anonymous ? std::string_view("//anon") : std::string_view(e.path);
    m.executable = true;
    sink.OnMmap(m);
  }
}

bool IsKernelThread(pid_t pid) {
  absl::StatusOr<std::string> stat = ReadSmallFile(absl::StrCat("/proc/", pid, "/stat"), 4096);
  if (!stat.ok()) return false;
  // fields[0] is field 3 (state), so flags (field 9) is fields[6].
  const std::vector<absl::string_view> fields = ProcStatFieldsAfterComm(*stat);
  uint64_t flags = 0;
  constexpr uint64_t kPfKthread = 0x00200000;
  return fields.size() > 6 && absl::SimpleAtoi(fields[6], &flags) && (flags & kPfKthread) != 0;
}

}  // namespace nativeprof::sampler
