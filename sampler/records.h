// Parsed perf ring-buffer records as views into the record's bytes. A view is valid only during
// the callback that delivers it (the bytes live in the ring or in the reader's scratch buffer), so
// parsing and dispatch allocate nothing. Used on the session's drain thread only.
#ifndef NATIVEPROF_SAMPLER_RECORDS_H_
#define NATIVEPROF_SAMPLER_RECORDS_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace nativeprof::sampler {

// Which of a session's events took a sample.
enum class SampleEvent : uint8_t {
  kSampling,       // the CPU sampling event (cpu-clock, cycles, ...)
  kContextSwitch,  // --off-cpu: the thread is being switched out (context-switches, period 1)
  kAlloc,          // --alloc: a sampled allocation (addr = the block, period = requested bytes)
  kFree,           // --alloc: the free of a sampled block (addr; period = alloc_channel flags)
  kPeakMark,       // --alloc: the run's exact live heap reached a new peak (addr = its bytes)
};

// PERF_RECORD_SAMPLE. Fields not in the event's sample_type are zero/empty.
struct SampleView {
  SampleEvent event = SampleEvent::kSampling;  // set by Session from `id`
  uint64_t id = 0;                       // PERF_SAMPLE_IDENTIFIER: the (parent) event's id
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time_ns = 0;
  uint32_t cpu = 0;
  uint64_t period = 0;
  uint64_t addr = 0;                     // PERF_SAMPLE_ADDR (--alloc: the block's avma)
  uint64_t ip = 0;                       // avma of the interrupted instruction
  std::span<const uint64_t> callchain;   // raw, with PERF_CONTEXT_* markers, leaf first
  uint64_t regs_abi = 0;                 // PERF_SAMPLE_REGS_ABI_*; 0 = no user registers
  std::span<const uint64_t> regs_user;   // one value per bit set in sample_regs_user, low bit first
  std::span<const uint8_t> stack_user;   // dyn_size bytes copied from the user sp upwards
  uint64_t stack_user_requested = 0;     // the size asked for; dyn_size == it means "maybe truncated"
};

// PERF_RECORD_MMAP / MMAP2.
struct MmapView {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t start_avma = 0;
  uint64_t length = 0;
  uint64_t file_offset = 0;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  uint32_t prot = 0;                     // PROT_*; PROT_EXEC for code
  uint32_t flags = 0;                    // MAP_*
  std::span<const uint8_t> build_id;     // non-empty when the kernel sent PERF_RECORD_MISC_MMAP_BUILD_ID
  std::string_view filename;
  bool executable = false;               // !(misc & PERF_RECORD_MISC_MMAP_DATA)
  uint64_t time_ns = 0;                  // from sample_id_all
};

// PERF_RECORD_COMM: a thread's name changed; `exec` when it changed because of execve.
struct CommView {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string_view comm;
  bool exec = false;
  uint64_t time_ns = 0;
};

// PERF_RECORD_FORK / PERF_RECORD_EXIT. A new thread has pid == ppid; a new process has pid != ppid.
struct TaskView {
  bool exit = false;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  uint32_t tid = 0;
  uint32_t ptid = 0;
  uint64_t time_ns = 0;
};

// PERF_RECORD_LOST (`lost` records dropped) and PERF_RECORD_LOST_SAMPLES.
struct LostView {
  uint64_t lost = 0;
  bool samples_only = false;  // LOST_SAMPLES: samples the kernel could not even generate
};

// PERF_RECORD_READ: an inherited counting event's final value, written when the task that
// inherited it exits (attr.inherit_stat). Non-group read_format only; fields the event's
// read_format lacks are zero.
struct ReadView {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t value = 0;
  uint64_t time_enabled = 0;
  uint64_t time_running = 0;
  uint64_t id = 0;                       // PERF_FORMAT_ID: which event (PERF_EVENT_IOC_ID)
  uint64_t time_ns = 0;                  // from sample_id_all
};

// PERF_RECORD_SWITCH (attr.context_switch on a per-task event): the sampled thread was switched
// in or out of a CPU. A switch-out while still runnable (preempted) is not a wait for an event.
struct SwitchView {
  uint32_t pid = 0;
  uint32_t tid = 0;
  bool out = false;
  bool preempted = false;                // PERF_RECORD_MISC_SWITCH_OUT_PREEMPT (Linux 4.17+)
  uint64_t time_ns = 0;                  // from sample_id_all
};

// PERF_RECORD_THROTTLE / UNTHROTTLE.
struct ThrottleView {
  bool throttled = false;
  uint64_t time_ns = 0;
};

// Receives parsed records. Called synchronously from the drain loop; must not block.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void OnSample(const SampleView& sample) = 0;
  // The parser's own view of a sample, which the sink may change before passing it on (the
  // session sets its event and rebuilds an allocation's stack in it) instead of copying it: a
  // copy read right after the parser's narrower stores cannot take them from the store buffer,
  // and was 8 % of the drain under --alloc=1.
  virtual void OnParsedSample(SampleView& sample) { OnSample(sample); }
  virtual void OnMmap(const MmapView& mmap) = 0;
  virtual void OnComm(const CommView& comm) = 0;
  virtual void OnTask(const TaskView& task) = 0;
  virtual void OnLost(const LostView& lost) = 0;
  virtual void OnThrottle(const ThrottleView& throttle) {}
  virtual void OnRead(const ReadView& read) {}
  virtual void OnSwitch(const SwitchView& sw) {}
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_RECORDS_H_
