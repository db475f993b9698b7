#include "sampler/counter_threads.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace nativeprof::sampler {
namespace {

uint64_t SaturatingSub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

}  // namespace

SampleFormat CounterSidebandFormat() {
  SampleFormat f;
  f.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  f.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
  f.sample_id_all = true;
  return f;
}

void AddCpuPart(const ReadFormatValues& part, ReadFormatValues* sum) {
  sum->value += part.value;
  sum->time_running += part.time_running;
  sum->time_enabled = std::max({sum->time_enabled, part.time_enabled, sum->time_running});
}

CounterSideband::CounterSideband(std::vector<EventSpec> events, size_t cpu_count,
                                 const std::vector<CounterId>& ids)
    : events_(std::move(events)), expected_parts_(events_.size(), 0) {
  for (const CounterId& id : ids) {
    if (id.id == 0 || id.event >= events_.size()) continue;
    target_by_id_[id.id] = {.event = id.event, .owner = id.owner};
    expected_parts_[id.event] = static_cast<uint32_t>(cpu_count);
  }
}

size_t CounterSideband::incomplete_tasks() const {
  size_t n = awaiting_read_.size();
  for (const Task& task : tasks_) {
    for (size_t i = 0; i < expected_parts_.size(); ++i) {
      if (task.parts[i] < expected_parts_[i]) {
        ++n;
        break;
      }
    }
  }
  return n;
}

void CounterSideband::NameTask(pid_t tid, std::string comm) {
  comm_by_tid_[tid] = std::move(comm);
}

// FORK and COMM of one task, and its READs, can sit in different CPUs' rings; the sorter
// delivers them in time order, which gives each task the name it had when it exited, and a
// reused tid a new row.
void CounterSideband::OnTask(const TaskView& task) {
  if (task.exit) return;  // READ records say when a task is done
  const pid_t tid = static_cast<pid_t>(task.tid);
  // A new task starts with its creator's name; only prctl/exec changes it (COMM records).
  auto parent = comm_by_tid_.find(static_cast<pid_t>(task.ptid));
  if (parent != comm_by_tid_.end()) {
    std::string name = parent->second;
    comm_by_tid_[tid] = std::move(name);
  }
  task_by_tid_.erase(tid);
  awaiting_read_.insert(tid);
}

void CounterSideband::OnComm(const CommView& comm) {
  comm_by_tid_[static_cast<pid_t>(comm.tid)] = std::string(comm.comm);
}

void CounterSideband::OnLost(const LostView& lost) {
  // LOST_SAMPLES counts samples; the counting events take none.
  if (!lost.samples_only) lost_ += lost.lost;
}

void CounterSideband::OnRead(const ReadView& read) {
  auto target = target_by_id_.find(read.id);
  if (target == target_by_id_.end()) return;  // not one of ours
  const pid_t tid = static_cast<pid_t>(read.tid);
  auto [it, inserted] = task_by_tid_.try_emplace(tid, tasks_.size());
  if (inserted) {
    Task task;
    task.pid = static_cast<pid_t>(read.pid);
    task.tid = tid;
    task.owner = target->second.owner;
    auto comm = comm_by_tid_.find(tid);
    if (comm != comm_by_tid_.end()) task.comm = comm->second;
    task.reads.resize(events_.size());
    task.parts.resize(events_.size());
    tasks_.push_back(std::move(task));
  }
  const size_t event = target->second.event;
  std::optional<ReadFormatValues>& sum = tasks_[it->second].reads[event];
  if (!sum.has_value()) sum.emplace();
  AddCpuPart({.value = read.value,
              .time_enabled = read.time_enabled,
              .time_running = read.time_running,
              .id = read.id},
             &*sum);
  ++tasks_[it->second].parts[event];
  awaiting_read_.erase(tid);
}

std::vector<ThreadCounters> CounterSideband::Build(
    const std::vector<std::vector<CounterValue>>& totals, pid_t pid,
    const std::vector<pid_t>& owner_tids) const {
  // rest[owner][event]: the owner's total minus every task that inherited from it.
  std::vector<std::vector<ReadFormatValues>> rest(totals.size());
  for (size_t o = 0; o < totals.size(); ++o) {
    for (const CounterValue& total : totals[o]) {
      rest[o].push_back({.value = total.raw,
                         .time_enabled = total.time_enabled,
                         .time_running = total.time_running});
    }
  }
  std::vector<ThreadCounters> out;
  for (const Task& task : tasks_) {
    if (task.owner >= totals.size()) continue;
    const std::vector<CounterValue>& owner_totals = totals[task.owner];
    ThreadCounters row;
    row.pid = task.pid;
    row.tid = task.tid;
    row.comm = task.comm;
    for (size_t i = 0; i < owner_totals.size(); ++i) {
      const CounterValue& total = owner_totals[i];
      CounterValue v;
      if (!total.supported) {
        v = UnsupportedCounterValue(total.event, total.unsupported_reason);
      } else if (i >= task.reads.size() || !task.reads[i].has_value()) {
        v = MakeCounterValue(total.event, 0, 0, 0);  // no READ record (lost): not counted
      } else {
        const ReadFormatValues& r = *task.reads[i];
        v = MakeCounterValue(total.event, r.value, r.time_enabled, r.time_running);
        ReadFormatValues& left = rest[task.owner][i];
        left.value = SaturatingSub(left.value, r.value);
        left.time_enabled = SaturatingSub(left.time_enabled, r.time_enabled);
        left.time_running = SaturatingSub(left.time_running, r.time_running);
      }
      v.pid = row.pid;
      v.tid = row.tid;
      v.comm = row.comm;
      row.values.push_back(std::move(v));
    }
    out.push_back(std::move(row));
  }
  for (size_t o = 0; o < totals.size() && o < owner_tids.size(); ++o) {
    ThreadCounters row;
    row.pid = pid;
    row.tid = owner_tids[o];
    auto comm = comm_by_tid_.find(row.tid);
    if (comm != comm_by_tid_.end()) row.comm = comm->second;
    for (size_t i = 0; i < totals[o].size(); ++i) {
      const CounterValue& total = totals[o][i];
      const ReadFormatValues& left = rest[o][i];
      CounterValue v =
          total.supported
              ? MakeCounterValue(total.event, left.value, left.time_enabled, left.time_running)
              : UnsupportedCounterValue(total.event, total.unsupported_reason);
      v.pid = row.pid;
      v.tid = row.tid;
      v.comm = row.comm;
      row.values.push_back(std::move(v));
    }
    out.push_back(std::move(row));
  }
  // The first owner (the main thread) first, then everything by pid and tid.
  const pid_t first = owner_tids.empty() ? -1 : owner_tids.front();
  std::stable_sort(out.begin(), out.end(), [first, pid](const ThreadCounters& a,
                                                        const ThreadCounters& b) {
    const bool a_first = a.pid == pid && a.tid == first;
    const bool b_first = b.pid == pid && b.tid == first;
    if (a_first != b_first) return a_first;
    return std::pair(a.pid, a.tid) < std::pair(b.pid, b.tid);
  });
  return out;
}

}  // namespace nativeprof::sampler
