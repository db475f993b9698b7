#include "sampler/counter_threads.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace nativeprof::sampler {
namespace {

template <typename T>
bool ReadAt(std::span<const uint8_t> bytes, size_t offset, T* out) {
  if (offset + sizeof(T) > bytes.size()) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

uint64_t SaturatingSub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

}  // namespace

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

void CounterSideband::OnRecord(std::span<const uint8_t> record) {
  perf_event_header header;
  if (!ReadAt(record, 0, &header) || header.size > record.size() ||
      header.size < sizeof(header) + kCounterSampleIdSize) {
    ++malformed_;
    return;
  }
  record = record.first(header.size);
  const size_t body = sizeof(perf_event_header);
  const size_t body_end = record.size() - kCounterSampleIdSize;
  Queued q;
  q.type = header.type;
  ReadAt(record, body_end + 8, &q.time);  // sample_id: pid, tid, time
  uint32_t pid = 0, tid = 0;
  bool complete = false;
  switch (header.type) {
    case PERF_RECORD_READ: {
      if (body_end < body + 8) break;
      ReadAt(record, body, &pid);
      ReadAt(record, body + 4, &tid);
      absl::StatusOr<ReadFormatValues> values = ParseReadFormat(
          record.subspan(body + 8, body_end - (body + 8)), /*with_id=*/true);
      if (!values.ok()) break;
      auto it = target_by_id_.find(values->id);
      if (it == target_by_id_.end()) return;  // not one of ours
      q.event_index = it->second.event;
      q.owner = it->second.owner;
      q.values = *values;
      complete = true;
      break;
    }
    case PERF_RECORD_COMM: {
      if (body_end < body + 8) break;
      ReadAt(record, body, &pid);
      ReadAt(record, body + 4, &tid);
      const char* name = reinterpret_cast<const char*>(record.data() + body + 8);
      q.comm.assign(name, strnlen(name, body_end - (body + 8)));
      complete = true;
      break;
    }
    case PERF_RECORD_FORK: {
      uint32_t ppid = 0, ptid = 0;
      if (body_end < body + 16) break;
      ReadAt(record, body, &pid);
      ReadAt(record, body + 4, &ppid);
      ReadAt(record, body + 8, &tid);
      ReadAt(record, body + 12, &ptid);
      q.ptid = static_cast<pid_t>(ptid);
      complete = true;
      break;
    }
    case PERF_RECORD_LOST: {
      uint64_t id = 0, lost = 0;
      if (body_end < body + 16) break;
      ReadAt(record, body, &id);
      ReadAt(record, body + 8, &lost);
      lost_ += lost;
      return;
    }
    default:
      return;  // EXIT and other side-band records are irrelevant to counting
  }
  if (!complete) {
    ++malformed_;
    return;
  }
  q.pid = static_cast<pid_t>(pid);
  q.tid = static_cast<pid_t>(tid);
  newest_seen_ = std::max(newest_seen_, q.time);
  queued_.push_back(std::move(q));
}

void CounterSideband::EndRound() {
  ApplyQueuedUpTo(applied_limit_);
  applied_limit_ = newest_seen_;
}

void CounterSideband::Finish() { ApplyQueuedUpTo(UINT64_MAX); }

void CounterSideband::NameTask(pid_t tid, std::string comm) {
  comm_by_tid_[tid] = std::move(comm);
}

void CounterSideband::ApplyQueuedUpTo(uint64_t time) {
  // FORK and COMM of one task, and its READs, can sit in different CPUs' rings; applying them in
  // time order gives each task the name it had when it exited, and a reused tid a new row.
  std::stable_sort(queued_.begin(), queued_.end(),
                   [](const Queued& a, const Queued& b) { return a.time < b.time; });
  auto end = std::partition_point(queued_.begin(), queued_.end(),
                                  [time](const Queued& q) { return q.time <= time; });
  for (auto it = queued_.begin(); it != end; ++it) Apply(*it);
  queued_.erase(queued_.begin(), end);
}

void CounterSideband::Apply(const Queued& q) {
  switch (q.type) {
    case PERF_RECORD_FORK: {
      // A new task starts with its creator's name; only prctl/exec changes it (COMM records).
      auto parent = comm_by_tid_.find(q.ptid);
      if (parent != comm_by_tid_.end()) {
        std::string name = parent->second;
        comm_by_tid_[q.tid] = std::move(name);
      }
      task_by_tid_.erase(q.tid);
      awaiting_read_.insert(q.tid);
      return;
    }
    case PERF_RECORD_COMM:
      comm_by_tid_[q.tid] = q.comm;
      return;
    case PERF_RECORD_READ: {
      auto [it, inserted] = task_by_tid_.try_emplace(q.tid, tasks_.size());
      if (inserted) {
        Task task;
        task.pid = q.pid;
        task.tid = q.tid;
        task.owner = q.owner;
        auto comm = comm_by_tid_.find(q.tid);
        if (comm != comm_by_tid_.end()) task.comm = comm->second;
        task.reads.resize(events_.size());
        task.parts.resize(events_.size());
        tasks_.push_back(std::move(task));
      }
      std::optional<ReadFormatValues>& sum = tasks_[it->second].reads[q.event_index];
      if (!sum.has_value()) sum.emplace();
      AddCpuPart(q.values, &*sum);
      ++tasks_[it->second].parts[q.event_index];
      awaiting_read_.erase(q.tid);
      return;
    }
    default:
      return;
  }
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

absl::StatusOr<CounterRing> CounterRing::Map(int fd, size_t data_pages) {
  if (data_pages == 0 || (data_pages & (data_pages - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ring size must be a power of two pages, got ", data_pages));
  }
  const size_t page_size = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t length = (1 + data_pages) * page_size;
  void* addr = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) return ErrnoError("mmap counter ring");
  return CounterRing(ScopedMmap(addr, length), page_size, data_pages * page_size);
}

CounterRing::CounterRing(ScopedMmap map, size_t page_size, size_t data_size)
    : map_(std::move(map)),
      page_size_(page_size),
      data_size_(data_size),
      reader_(static_cast<perf_event_mmap_page*>(map_.get()),
              static_cast<uint8_t*>(map_.get()) + page_size, data_size) {}

void CounterRing::Drain(CounterSideband* sideband) {
  reader_.Drain([sideband](std::span<const uint8_t> record) { sideband->OnRecord(record); });
}

namespace {

// A record found past data_head is trusted only if its type is one the counting events write
// and its sample_id trailer names the task the body names (two CPUs that wrote into the same
// space leave records that fail this).
bool PlausibleUnpublishedRecord(std::span<const uint8_t> record) {
  perf_event_header header;
  std::memcpy(&header, record.data(), sizeof(header));
  uint32_t sample_tid = 0;
  ReadAt(record, record.size() - kCounterSampleIdSize + 4, &sample_tid);
  const size_t body = sizeof(header);
  uint32_t tid = 0;
  switch (header.type) {
    case PERF_RECORD_READ:
    case PERF_RECORD_COMM:
      ReadAt(record, body + 4, &tid);  // pid, tid
      return tid == sample_tid;
    case PERF_RECORD_FORK:
      ReadAt(record, body + 12, &tid);  // pid, ppid, tid, ptid: written by the creator
      return tid == sample_tid;
    case PERF_RECORD_EXIT:
      ReadAt(record, body + 8, &tid);  // pid, ppid, tid, ptid: written by the exiting task
      return tid == sample_tid;
    default:
      return false;
  }
}

}  // namespace

size_t CounterRing::DrainUnpublished(CounterSideband* sideband) {
  auto* meta = static_cast<perf_event_mmap_page*>(map_.get());
  const uint8_t* data = static_cast<const uint8_t*>(map_.get()) + page_size_;
  uint64_t pos = meta->data_tail;
  size_t recovered = 0;
  // Only the first lap: there the bytes past data_head were zero until the kernel wrote a record,
  // so a plausible record cannot be a stale one from an earlier lap. Records are 8-byte aligned;
  // after a damaged one, step to the next aligned header that checks out.
  while (pos + sizeof(perf_event_header) + kCounterSampleIdSize <= data_size_) {
    perf_event_header header;
    std::memcpy(&header, data + pos, sizeof(header));
    if (header.size >= sizeof(header) + kCounterSampleIdSize && header.size % 8 == 0 &&
        pos + header.size <= data_size_) {
      std::span<const uint8_t> record(data + pos, header.size);
      if (PlausibleUnpublishedRecord(record)) {
        sideband->OnRecord(record);
        pos += header.size;
        ++recovered;
        continue;
      }
    }
    pos += 8;
  }
  if (recovered > 0) __atomic_store_n(&meta->data_tail, pos, __ATOMIC_RELEASE);
  return recovered;
}

}  // namespace nativeprof::sampler
