#include "sampler/event_spec.h"

#include <linux/perf_event.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace nativeprof::sampler {
namespace {

constexpr uint64_t CacheConfig(uint64_t cache, uint64_t op, uint64_t result) {
  return cache | (op << 8) | (result << 16);
}

struct NamedEvent {
  const char* name;
  const char* alias;  // second accepted spelling, or nullptr
  uint32_t type;
  uint64_t config;
  const char* unit;
};

constexpr NamedEvent kEvents[] = {
    {"cycles", "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, ""},
    {"instructions", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, ""},
    {"branches", "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, ""},
    {"branch-misses", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, ""},
    {"cache-references", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, ""},
    {"cache-misses", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, ""},
    {"bus-cycles", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, ""},
    {"ref-cycles", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, ""},
    {"stalled-cycles-frontend", "idle-cycles-frontend", PERF_TYPE_HARDWARE,
     PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, ""},
    {"stalled-cycles-backend", "idle-cycles-backend", PERF_TYPE_HARDWARE,
     PERF_COUNT_HW_STALLED_CYCLES_BACKEND, ""},
    {"cpu-clock", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, "msec"},
    {"task-clock", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "msec"},
    {"page-faults", "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, ""},
    {"minor-faults", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, ""},
    {"major-faults", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, ""},
    {"context-switches", "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, ""},
    {"cpu-migrations", "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, ""},
    {"alignment-faults", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, ""},
    {"emulation-faults", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, ""},
    {"L1-dcache-loads", nullptr, PERF_TYPE_HW_CACHE,
     CacheConfig(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
                 PERF_COUNT_HW_CACHE_RESULT_ACCESS), ""},
    {"L1-dcache-load-misses", nullptr, PERF_TYPE_HW_CACHE,
     CacheConfig(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
                 PERF_COUNT_HW_CACHE_RESULT_MISS), ""},
    {"L1-icache-load-misses", nullptr, PERF_TYPE_HW_CACHE,
     CacheConfig(PERF_COUNT_HW_CACHE_L1I, PERF_COUNT_HW_CACHE_OP_READ,
                 PERF_COUNT_HW_CACHE_RESULT_MISS), ""},
    {"LLC-loads", nullptr, PERF_TYPE_HW_CACHE,
     CacheConfig(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ,
                 PERF_COUNT_HW_CACHE_RESULT_ACCESS), ""},
    {"LLC-load-misses", nullptr, PERF_TYPE_HW_CACHE,
     CacheConfig(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ,
                 PERF_COUNT_HW_CACHE_RESULT_MISS), ""},
    {"dTLB-load-misses", nullptr, PERF_TYPE_HW_CACHE,
     CacheConfig(PERF_COUNT_HW_CACHE_DTLB, PERF_COUNT_HW_CACHE_OP_READ,
                 PERF_COUNT_HW_CACHE_RESULT_MISS), ""},
    {"iTLB-load-misses", nullptr, PERF_TYPE_HW_CACHE,
     CacheConfig(PERF_COUNT_HW_CACHE_ITLB, PERF_COUNT_HW_CACHE_OP_READ,
                 PERF_COUNT_HW_CACHE_RESULT_MISS), ""},
};

EventSpec FromNamed(const NamedEvent& e) {
  EventSpec spec;
  spec.name = e.name;
  spec.type = e.type;
  spec.config = e.config;
  spec.hardware = e.type == PERF_TYPE_HARDWARE || e.type == PERF_TYPE_HW_CACHE;
  spec.unit = e.unit;
  return spec;
}

}  // namespace

absl::StatusOr<EventSpec> ParseEventSpec(absl::string_view raw_name) {
  absl::string_view name = absl::StripAsciiWhitespace(raw_name);
  for (const NamedEvent& e : kEvents) {
    if (name == e.name || (e.alias != nullptr && name == e.alias)) return FromNamed(e);
  }
  if (absl::StartsWith(name, "raw:") || (name.size() > 1 && name[0] == 'r' &&
                                         absl::ascii_isxdigit(static_cast<unsigned char>(name[1])))) {
    absl::string_view hex = absl::StartsWith(name, "raw:") ? name.substr(4) : name.substr(1);
    if (absl::StartsWith(hex, "0x") || absl::StartsWith(hex, "0X")) hex.remove_prefix(2);
    uint64_t config = 0;
    if (!hex.empty() && absl::SimpleHexAtoi(hex, &config)) {
      EventSpec spec;
      spec.name = absl::StrCat("raw:0x", absl::Hex(config));
      spec.type = PERF_TYPE_RAW;
      spec.config = config;
      spec.hardware = true;
      return spec;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown event '", name, "'; valid events: ", absl::StrJoin(KnownEventNames(), ", "),
      ", raw:0xNNNN"));
}

absl::StatusOr<std::vector<EventSpec>> ParseEventList(absl::string_view list) {
  std::vector<EventSpec> specs;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    absl::StatusOr<EventSpec> spec = ParseEventSpec(part);
    if (!spec.ok()) return spec.status();
    specs.push_back(*std::move(spec));
  }
  if (specs.empty()) return absl::InvalidArgumentError("empty event list");
  return specs;
}

std::vector<std::string> KnownEventNames() {
  std::vector<std::string> names;
  for (const NamedEvent& e : kEvents) names.push_back(e.name);
  return names;
}

EventSpec CpuClockEvent() { return *ParseEventSpec("cpu-clock"); }

EventSpec NoSamplesEvent() {
  EventSpec e;
  e.name = "none";
  e.type = PERF_TYPE_SOFTWARE;
  e.config = PERF_COUNT_SW_DUMMY;
  return e;
}

bool IsNoSamplesEvent(const EventSpec& event) {
  return event.type == PERF_TYPE_SOFTWARE && event.config == PERF_COUNT_SW_DUMMY;
}

}  // namespace nativeprof::sampler
