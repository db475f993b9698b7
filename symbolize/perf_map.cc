#include "symbolize/perf_map.h"

#include <unistd.h>

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "sampler/proc_maps.h"

namespace nativeprof::symbolize {

SymbolTable ParsePerfMap(absl::string_view text) {
  struct Entry {
    uint64_t start, size;
    absl::string_view name;
  };
  std::vector<Entry> entries;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripTrailingAsciiWhitespace(line);
    size_t sp1 = line.find(' ');
    if (sp1 == absl::string_view::npos) continue;
    size_t sp2 = line.find(' ', sp1 + 1);
    if (sp2 == absl::string_view::npos) continue;
    absl::string_view start_text = line.substr(0, sp1);
    absl::string_view size_text = line.substr(sp1 + 1, sp2 - sp1 - 1);
    absl::ConsumePrefix(&start_text, "0x");
    absl::ConsumePrefix(&size_text, "0x");
    Entry e;
    if (!absl::SimpleHexAtoi(start_text, &e.start) || !absl::SimpleHexAtoi(size_text, &e.size)) {
      continue;
    }
    e.name = line.substr(sp2 + 1);
    if (e.size == 0 || e.size > kMaxPerfMapSymbolBytes || e.size - 1 > UINT64_MAX - e.start ||
        e.name.empty() || e.name.size() > kMaxPerfMapNameBytes) {
      continue;
    }
    entries.push_back(e);
  }
  // Later lines win: give them a higher rank by adding them as "global" and earlier duplicates at
  // the same start as "local". Overlaps at different starts resolve to the nearest start.
  SymbolTable table;
  absl::flat_hash_map<uint64_t, size_t> last_at;
  for (size_t i = 0; i < entries.size(); ++i) last_at[entries[i].start] = i;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (last_at[entries[i].start] != i) continue;
    table.Add(entries[i].start, entries[i].size, entries[i].name, SymbolTable::kGlobal);
  }
  table.Finish();
  return table;
}

namespace {

// Whether process `pid` sees another file tree than this one: a container, or a service with a
// private /tmp (systemd's PrivateTmp).
bool InOtherMountNamespace(int32_t pid) {
  char own[64] = {}, its[64] = {};
  const ssize_t n = ::readlink("/proc/self/ns/mnt", own, sizeof(own) - 1);
  const ssize_t m = ::readlink(absl::StrCat("/proc/", pid, "/ns/mnt").c_str(), its, sizeof(its) - 1);
  return n > 0 && m > 0 && absl::string_view(own, n) != absl::string_view(its, m);
}

}  // namespace

absl::StatusOr<SymbolTable> LoadPerfMap(int32_t pid, const std::string& dir) {
  absl::StatusOr<std::string> text =
      ReadSmallFile(absl::StrCat(dir, "/perf-", pid, ".map"), kMaxPerfMapFileBytes);
  if (absl::IsNotFound(text.status())) {
    // A process in a container writes its map in its own /tmp, named after its pid there, as
    // perf also knows: reachable through /proc/PID/root while the process lives.
    absl::StatusOr<pid_t> inner = sampler::PidInOwnNamespace(pid);
    if (inner.ok() && (*inner != pid || InOtherMountNamespace(pid))) {
      text = ReadSmallFile(absl::StrCat("/proc/", pid, "/root", dir, "/perf-", *inner, ".map"),
                           kMaxPerfMapFileBytes);
    }
  }
  if (!text.ok()) return text.status();
  return ParsePerfMap(*text);
}

}  // namespace nativeprof::symbolize
