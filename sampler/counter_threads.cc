#include "sampler/counter_threads.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

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

CounterSideband::CounterSideband(std::vector<EventSpec> events, std::vector<uint64_t> ids)
    : events_(std::move(events)) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != 0) index_by_id_[ids[i]] = i;
  }
}

void CounterSideband::OnRecord(std::span<const uint8_t> record) {
  perf_event_header header;
  if (!ReadAt(record, 0, &header) || header.size > record.size()) {
    ++malformed_;
    return;
  }
  record = record.first(header.size);
  const size_t body = sizeof(perf_event_header);
  uint32_t pid = 0, tid = 0;
  switch (header.type) {
    case PERF_RECORD_READ: {
      if (!ReadAt(record, body, &pid) || !ReadAt(record, body + 4, &tid)) break;
      absl::StatusOr<ReadFormatValues> values =
          ParseReadFormat(record.subspan(std::min(record.size(), body + 8)), /*with_id=*/true);
      if (!values.ok()) break;
      auto it = index_by_id_.find(values->id);
      if (it == index_by_id_.end()) return;  // not one of ours (e.g. the dummy event)
      Task& task = exited_[static_cast<pid_t>(tid)];
      task.pid = static_cast<pid_t>(pid);
      auto comm = comm_by_tid_.find(static_cast<pid_t>(tid));
      if (comm != comm_by_tid_.end()) task.comm = comm->second;
      task.reads[it->second] = *values;
      return;
    }
    case PERF_RECORD_COMM: {
      if (!ReadAt(record, body, &pid) || !ReadAt(record, body + 4, &tid)) break;
      const char* name = reinterpret_cast<const char*>(record.data() + body + 8);
      size_t max_len = record.size() - std::min(record.size(), body + 8);
      comm_by_tid_[static_cast<pid_t>(tid)] = std::string(name, strnlen(name, max_len));
      return;
    }
    case PERF_RECORD_FORK: {
      uint32_t ppid = 0, ptid = 0;
      if (!ReadAt(record, body, &pid) || !ReadAt(record, body + 4, &ppid) ||
          !ReadAt(record, body + 8, &tid) || !ReadAt(record, body + 12, &ptid)) {
        break;
      }
      // A new task starts with its creator's name; only prctl/exec changes it (COMM records).
      auto parent = comm_by_tid_.find(static_cast<pid_t>(ptid));
      if (parent != comm_by_tid_.end()) comm_by_tid_[static_cast<pid_t>(tid)] = parent->second;
      return;
    }
    case PERF_RECORD_EXIT:
      return;
    case PERF_RECORD_LOST: {
      uint64_t id = 0, lost = 0;
      if (!ReadAt(record, body, &id) || !ReadAt(record, body + 8, &lost)) break;
      lost_ += lost;
      return;
    }
    default:
      return;  // other side-band records are irrelevant to counting
  }
  ++malformed_;
}

std::vector<ThreadCounters> CounterSideband::Build(const std::vector<CounterValue>& totals,
                                                   pid_t main_tid,
                                                   const std::string& main_comm) const {
  std::vector<ReadFormatValues> rest(totals.size());
  for (size_t i = 0; i < totals.size(); ++i) {
    rest[i].value = totals[i].raw;
    rest[i].time_enabled = totals[i].time_enabled;
    rest[i].time_running = totals[i].time_running;
  }
  std::vector<ThreadCounters> out;
  for (const auto& [tid, task] : exited_) {
    ThreadCounters row;
    row.pid = task.pid;
    row.tid = tid;
    row.comm = task.comm;
    for (size_t i = 0; i < totals.size(); ++i) {
      const CounterValue& total = totals[i];
      auto it = task.reads.find(i);
      CounterValue v;
      if (!total.supported) {
        v = UnsupportedCounterValue(total.event, total.unsupported_reason);
      } else if (it == task.reads.end()) {
        v = MakeCounterValue(total.event, 0, 0, 0);  // no READ record (lost): not counted
      } else {
        const ReadFormatValues& r = it->second;
        v = MakeCounterValue(total.event, r.value, r.time_enabled, r.time_running);
        rest[i].value = SaturatingSub(rest[i].value, r.value);
        rest[i].time_enabled = SaturatingSub(rest[i].time_enabled, r.time_enabled);
        rest[i].time_running = SaturatingSub(rest[i].time_running, r.time_running);
      }
      v.pid = row.pid;
      v.tid = row.tid;
      v.comm = row.comm;
      row.values.push_back(std::move(v));
    }
    out.push_back(std::move(row));
  }
  ThreadCounters main_row;
  main_row.pid = main_tid;
  main_row.tid = main_tid;
  auto comm = comm_by_tid_.find(main_tid);
  main_row.comm = comm != comm_by_tid_.end() ? comm->second : main_comm;
  for (size_t i = 0; i < totals.size(); ++i) {
    CounterValue v = totals[i].supported
                         ? MakeCounterValue(totals[i].event, rest[i].value, rest[i].time_enabled,
                                            rest[i].time_running)
                         : UnsupportedCounterValue(totals[i].event, totals[i].unsupported_reason);
    v.pid = main_row.pid;
    v.tid = main_row.tid;
    v.comm = main_row.comm;
    main_row.values.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [](const ThreadCounters& a, const ThreadCounters& b) {
    return std::pair(a.pid, a.tid) < std::pair(b.pid, b.tid);
  });
  out.insert(out.begin(), std::move(main_row));
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

void CounterRing::Drain(CounterSideband* sideband) {
  auto* meta = static_cast<perf_event_mmap_page*>(map_.get());
  const uint8_t* data = static_cast<const uint8_t*>(map_.get()) + page_size_;
  // The kernel publishes data_head after writing records; pair with its barrier, and hand space
  // back with a release store of data_tail once the records are consumed.
  uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  while (tail + sizeof(perf_event_header) <= head) {
    perf_event_header header;
    const size_t offset = tail % data_size_;
    for (size_t i = 0; i < sizeof(header); ++i) {
      reinterpret_cast<uint8_t*>(&header)[i] = data[(offset + i) % data_size_];
    }
    if (header.size < sizeof(header) || tail + header.size > head) break;
    std::span<const uint8_t> record;
    if (offset + header.size <= data_size_) {
      record = std::span<const uint8_t>(data + offset, header.size);
    } else {
      scratch_.resize(header.size);
      const size_t first = data_size_ - offset;
      std::memcpy(scratch_.data(), data + offset, first);
      std::memcpy(scratch_.data() + first, data, header.size - first);
      record = std::span<const uint8_t>(scratch_.data(), header.size);
    }
    sideband->OnRecord(record);
    tail += header.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

}  // namespace nativeprof::sampler
