#include "sampler/record_parser.h"

#include <linux/perf_event.h>
#include <time.h>

#include <cstddef>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "sampler/alloc_channel_layout.h"

namespace nativeprof::sampler {
namespace {

// Bounds-checked cursor over a record. Every read checks the remaining length, so a lying size
// field ends in kDataLoss instead of an out-of-bounds read.
class Cursor {
 public:
  Cursor(const uint8_t* begin, const uint8_t* end) : p_(begin), end_(end) {}

  bool ok() const { return ok_; }
  size_t remaining() const { return ok_ ? static_cast<size_t>(end_ - p_) : 0; }
  const uint8_t* pos() const { return p_; }

  template <typename T>
  T Read() {
    T v{};
    if (!Need(sizeof(T))) return v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  // `count` u64 values as a span into the record. Kernel records keep these aligned (RAW's size
  // includes its padding); a record that does not is corrupt, since a misaligned span of u64
  // cannot be read safely.
  std::span<const uint64_t> ReadU64s(uint64_t count) {
    if (count > remaining() / 8 || !Need(count * 8) ||
        reinterpret_cast<uintptr_t>(p_) % alignof(uint64_t) != 0) {
      ok_ = false;
      return {};
    }
    auto span = std::span<const uint64_t>(reinterpret_cast<const uint64_t*>(p_), count);
    p_ += count * 8;
    return span;
  }
  std::span<const uint8_t> ReadBytes(uint64_t count) {
    if (count > remaining() || !Need(count)) {
      ok_ = false;
      return {};
    }
    auto span = std::span<const uint8_t>(p_, count);
    p_ += count;
    return span;
  }
  void Skip(uint64_t n) {
    if (n > remaining()) {
      ok_ = false;
      return;
    }
    p_ += n;
  }

 private:
  bool Need(size_t n) {
    if (!ok_ || static_cast<size_t>(end_ - p_) < n) {
      ok_ = false;
      return false;
    }
    return true;
  }
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

// Size of the sample_id trailer that sample_id_all appends to non-sample records.
size_t SampleIdSize(uint64_t st) {
  size_t n = 0;
  if (st & PERF_SAMPLE_TID) n += 8;
  if (st & PERF_SAMPLE_TIME) n += 8;
  if (st & PERF_SAMPLE_ID) n += 8;
  if (st & PERF_SAMPLE_STREAM_ID) n += 8;
  if (st & PERF_SAMPLE_CPU) n += 8;
  if (st & PERF_SAMPLE_IDENTIFIER) n += 8;
  return n;
}

struct SampleId {
  uint32_t pid = 0, tid = 0, cpu = 0;
  uint64_t time = 0;
};

SampleId ReadSampleId(Cursor c, uint64_t st) {
  SampleId id;
  if (st & PERF_SAMPLE_TID) {
    id.pid = c.Read<uint32_t>();
    id.tid = c.Read<uint32_t>();
  }
  if (st & PERF_SAMPLE_TIME) id.time = c.Read<uint64_t>();
  if (st & PERF_SAMPLE_ID) c.Skip(8);
  if (st & PERF_SAMPLE_STREAM_ID) c.Skip(8);
  if (st & PERF_SAMPLE_CPU) id.cpu = c.Read<uint32_t>();
  return id;
}

size_t ReadFormatSize(uint64_t read_format) {
  // Non-group layout: value, then optional enabled, running, id, lost.
  size_t n = 8;
  if (read_format & PERF_FORMAT_TOTAL_TIME_ENABLED) n += 8;
  if (read_format & PERF_FORMAT_TOTAL_TIME_RUNNING) n += 8;
  if (read_format & PERF_FORMAT_ID) n += 8;
  // PERF_FORMAT_LOST is an enumerator, not a macro: it cannot be tested with #ifdef.
  if (read_format & PERF_FORMAT_LOST) n += 8;
  return n;
}

std::string_view CString(std::span<const uint8_t> bytes) {
  const char* s = reinterpret_cast<const char*>(bytes.data());
  return std::string_view(s, strnlen(s, bytes.size()));
}

absl::Status Truncated(uint32_t type) {
  return absl::DataLossError(absl::StrCat("truncated perf record of type ", type));
}

// An alloc_channel::FreeRecord, handed on as the sample of the free it stands for, or of each
// free of a batch (kFreeRecordBatch), in order.
absl::StatusOr<ParseOutcome> ParseFreeRecord(std::span<const uint8_t> record, RecordSink& sink) {
  alloc_channel::FreeRecord r;
  if (record.size() < sizeof(r)) return Truncated(alloc_channel::kFreeRecordType);
  std::memcpy(&r, record.data(), sizeof(r));
  SampleView s;
  s.id = (r.header.misc & alloc_channel::kFreeRecordPeak) != 0 ? alloc_channel::kPeakMarkSampleId
                                                               : alloc_channel::kFreeSampleId;
  s.pid = r.pid;
  s.tid = r.tid;
  s.time_ns = r.time_ns;
  if ((r.header.misc & alloc_channel::kFreeRecordBatch) == 0 || s.id != alloc_channel::kFreeSampleId) {
    s.addr = r.addr;
    s.period = (r.header.misc & alloc_channel::kFreeRecordTemporary) != 0
                   ? alloc_channel::kFreeTemporary
                   : 0;
    sink.OnParsedSample(s);
    return ParseOutcome::kDelivered;
  }
  // The entries run from `addr` to the record's end; bytes short of a whole entry are padding.
  constexpr size_t kFirst = offsetof(alloc_channel::FreeRecord, addr);
  for (size_t at = kFirst; at + sizeof(uint64_t) <= record.size(); at += sizeof(uint64_t)) {
    uint64_t entry;
    std::memcpy(&entry, record.data() + at, sizeof(entry));
    s.addr = entry & ~alloc_channel::kFreeEntryFlagMask;
    s.period = (entry & alloc_channel::kFreeEntryTemporary) != 0 ? alloc_channel::kFreeTemporary
                                                                  : 0;
    sink.OnParsedSample(s);
  }
  return ParseOutcome::kDelivered;
}

// Takes the record's bounds, not a Cursor: one passed by value goes through memory, where the
// callee's wide load of the caller's narrow stores stalled on store forwarding (half of
// ParseRecord's time under --alloc=1).
absl::StatusOr<ParseOutcome> ParseSample(const uint8_t* begin, const uint8_t* end,
                                         const SampleFormat& f, RecordSink& sink) {
  Cursor c(begin, end);
  const uint64_t st = f.sample_type;
  SampleView s;
  if (st & PERF_SAMPLE_IDENTIFIER) s.id = c.Read<uint64_t>();
  if (st & PERF_SAMPLE_IP) s.ip = c.Read<uint64_t>();
  if (st & PERF_SAMPLE_TID) {
    s.pid = c.Read<uint32_t>();
    s.tid = c.Read<uint32_t>();
  }
  if (st & PERF_SAMPLE_TIME) s.time_ns = c.Read<uint64_t>();
  if (st & PERF_SAMPLE_ADDR) s.addr = c.Read<uint64_t>();
  if (st & PERF_SAMPLE_ID) c.Skip(8);
  if (st & PERF_SAMPLE_STREAM_ID) c.Skip(8);
  if (st & PERF_SAMPLE_CPU) {
    s.cpu = c.Read<uint32_t>();
    c.Skip(4);
  }
  if (st & PERF_SAMPLE_PERIOD) s.period = c.Read<uint64_t>();
  if (st & PERF_SAMPLE_READ) {
    if (f.read_format & PERF_FORMAT_GROUP) {
      uint64_t nr = c.Read<uint64_t>();
      size_t per = 8 + ((f.read_format & PERF_FORMAT_ID) ? 8 : 0) +
                   ((f.read_format & PERF_FORMAT_LOST) ? 8 : 0);
      size_t head = ((f.read_format & PERF_FORMAT_TOTAL_TIME_ENABLED) ? 8 : 0) +
                    ((f.read_format & PERF_FORMAT_TOTAL_TIME_RUNNING) ? 8 : 0);
      if (nr > c.remaining() / per) return Truncated(PERF_RECORD_SAMPLE);
      c.Skip(head + nr * per);
    } else {
      c.Skip(ReadFormatSize(f.read_format));
    }
  }
  if (st & PERF_SAMPLE_CALLCHAIN) {
    uint64_t nr = c.Read<uint64_t>();
    s.callchain = c.ReadU64s(nr);
  }
  if (st & PERF_SAMPLE_RAW) {
    uint32_t size = c.Read<uint32_t>();
    c.Skip(size);
  }
  if (st & PERF_SAMPLE_BRANCH_STACK) {
    // nativeprof never requests branch stacks; their layout depends on attr.branch_sample_type.
    return ParseOutcome::kIgnored;
  }
  if (st & PERF_SAMPLE_REGS_USER) {
    s.regs_abi = c.Read<uint64_t>();
    if (s.regs_abi != PERF_SAMPLE_REGS_ABI_NONE) {
      s.regs_user = c.ReadU64s(static_cast<uint64_t>(__builtin_popcountll(f.regs_user_mask)));
    }
  }
  if (st & PERF_SAMPLE_STACK_USER) {
    uint64_t size = c.Read<uint64_t>();
    s.stack_user_requested = size;
    if (size != 0) {
      std::span<const uint8_t> data = c.ReadBytes(size);
      uint64_t dyn_size = c.Read<uint64_t>();
      s.stack_user = data.first(std::min<uint64_t>(dyn_size, data.size()));
    }
  }
  if (!c.ok()) return Truncated(PERF_RECORD_SAMPLE);
  sink.OnParsedSample(s);
  return ParseOutcome::kDelivered;
}

}  // namespace

uint64_t RecordTime(std::span<const uint8_t> record, const SampleFormat& f) {
  const uint64_t st = f.sample_type;
  if (!(st & PERF_SAMPLE_TIME) || record.size() < sizeof(perf_event_header)) return 0;
  perf_event_header hdr;
  std::memcpy(&hdr, record.data(), sizeof(hdr));
  if (hdr.size > record.size()) return 0;
  size_t offset;
  if (hdr.type == PERF_RECORD_SAMPLE) {
    offset = sizeof(hdr) + ((st & PERF_SAMPLE_IDENTIFIER) ? 8 : 0) + ((st & PERF_SAMPLE_IP) ? 8 : 0) +
             ((st & PERF_SAMPLE_TID) ? 8 : 0);
  } else if (hdr.type == alloc_channel::kFreeRecordType) {
    offset = offsetof(alloc_channel::FreeRecord, time_ns);
  } else {
    if (!f.sample_id_all) return 0;
    size_t id_size = SampleIdSize(st);
    if (hdr.size < sizeof(hdr) + id_size) return 0;
    offset = hdr.size - id_size + ((st & PERF_SAMPLE_TID) ? 8 : 0);
  }
  if (offset + 8 > hdr.size) return 0;
  uint64_t t;
  std::memcpy(&t, record.data() + offset, 8);
  return t;
}

bool IsConsistentTaskRecord(std::span<const uint8_t> record, const SampleFormat& f) {
  if (!f.sample_id_all || !(f.sample_type & PERF_SAMPLE_TID)) return false;
  if (record.size() < sizeof(perf_event_header)) return false;
  perf_event_header hdr;
  std::memcpy(&hdr, record.data(), sizeof(hdr));
  const size_t id_size = SampleIdSize(f.sample_type);
  // Where the body names the writing task: the tid of {pid, tid} in COMM and READ; of
  // {pid, ppid, tid, ptid}, ptid in FORK (the creator writes it) and tid in EXIT (the exiting
  // task does).
  size_t tid_offset;
  switch (hdr.type) {
    case PERF_RECORD_READ:
    case PERF_RECORD_COMM:
      tid_offset = 4;
      break;
    case PERF_RECORD_FORK:
      tid_offset = 12;
      break;
    case PERF_RECORD_EXIT:
      tid_offset = 8;
      break;
    default:
      return false;
  }
  if (hdr.size > record.size() || hdr.size < sizeof(hdr) + id_size + tid_offset + 4) return false;
  const uint8_t* body_end = record.data() + hdr.size - id_size;
  const SampleId id = ReadSampleId(Cursor(body_end, record.data() + hdr.size), f.sample_type);
  uint32_t tid = 0;
  std::memcpy(&tid, record.data() + sizeof(hdr) + tid_offset, sizeof(tid));
  return tid == id.tid;
}

namespace {

// Keeps the SampleView a sample parses to (its spans point into the record).
class SampleCapture final : public RecordSink {
 public:
  void OnSample(const SampleView& sample) override { sample_ = sample; }
  void OnMmap(const MmapView&) override {}
  void OnComm(const CommView&) override {}
  void OnTask(const TaskView&) override {}
  void OnLost(const LostView&) override {}
  const SampleView& sample() const { return sample_; }

 private:
  SampleView sample_;
};

}  // namespace

size_t CompactSample(std::span<const uint8_t> record, const SampleFormat& f, uint8_t* out) {
  auto whole = [&] {
    if (out != nullptr) std::memcpy(out, record.data(), record.size());
    return record.size();
  };
  // Fields the kernel writes after the stack (weight, data source, ...) would have to move.
  constexpr uint64_t kUpToStack = (uint64_t{PERF_SAMPLE_STACK_USER} << 1) - 1;
  if (!(f.sample_type & PERF_SAMPLE_STACK_USER) ||
      (f.sample_type & ~kUpToStack & ~uint64_t{PERF_SAMPLE_IDENTIFIER}) != 0 ||
      record.size() < sizeof(perf_event_header)) {
    return whole();
  }
  perf_event_header hdr;
  std::memcpy(&hdr, record.data(), sizeof(hdr));
  if (hdr.type != PERF_RECORD_SAMPLE || hdr.size != record.size()) return whole();
  SampleCapture capture;
  absl::StatusOr<ParseOutcome> parsed =
      ParseSample(record.data() + sizeof(hdr), record.data() + record.size(), f, capture);
  const SampleView& s = capture.sample();
  if (!parsed.ok() || *parsed != ParseOutcome::kDelivered || s.stack_user_requested == 0 ||
      s.stack_user.data() == nullptr) {
    return whole();
  }
  const size_t stack_at = static_cast<size_t>(s.stack_user.data() - record.data());
  const uint64_t dyn = s.stack_user.size();
  const uint64_t keep =
      std::min<uint64_t>(s.stack_user_requested, ((dyn + 7) & ~uint64_t{7}) +
                                                     (dyn < s.stack_user_requested ? 8 : 0));
  const size_t size = stack_at + keep + sizeof(uint64_t);
  // The record ends with the stack bytes and dyn_size (checked above), so nothing is lost.
  if (size >= record.size() || size > UINT16_MAX) return whole();
  if (out != nullptr) {
    std::memcpy(out, record.data(), stack_at + keep);
    std::memcpy(out + stack_at - sizeof(uint64_t), &keep, sizeof(keep));
    std::memcpy(out + stack_at + keep, &dyn, sizeof(dyn));
    hdr.size = static_cast<uint16_t>(size);
    std::memcpy(out, &hdr, sizeof(hdr));
  }
  return size;
}

SampleFormat SampleFormat::FromAttr(const perf_event_attr& attr) {
  SampleFormat f;
  f.sample_type = attr.sample_type;
  f.regs_user_mask = attr.sample_regs_user;
  f.read_format = attr.read_format;
  f.sample_id_all = attr.sample_id_all != 0;
  f.monotonic_clock = attr.use_clockid != 0 && attr.clockid == CLOCK_MONOTONIC;
  return f;
}

absl::StatusOr<ParseOutcome> ParseRecord(std::span<const uint8_t> record, const SampleFormat& f,
                                         RecordSink& sink) {
  if (reinterpret_cast<uintptr_t>(record.data()) % 8 != 0) {
    return absl::InvalidArgumentError("perf record is not 8-byte aligned");
  }
  if (record.size() < sizeof(perf_event_header)) return Truncated(0);
  perf_event_header hdr;
  std::memcpy(&hdr, record.data(), sizeof(hdr));
  if (hdr.size < sizeof(hdr) || hdr.size > record.size()) return Truncated(hdr.type);
  const uint8_t* begin = record.data() + sizeof(hdr);
  const uint8_t* end = record.data() + hdr.size;

  if (hdr.type == PERF_RECORD_SAMPLE) return ParseSample(begin, end, f, sink);
  if (hdr.type == alloc_channel::kFreeRecordType) return ParseFreeRecord(record.first(hdr.size), sink);

  // Non-sample records end with the sample_id trailer.
  const size_t id_size = f.sample_id_all ? SampleIdSize(f.sample_type) : 0;
  if (static_cast<size_t>(end - begin) < id_size) return Truncated(hdr.type);
  const uint8_t* body_end = end - id_size;
  const SampleId id =
      f.sample_id_all ? ReadSampleId(Cursor(body_end, end), f.sample_type) : SampleId{};
  Cursor c(begin, body_end);

  switch (hdr.type) {
    case PERF_RECORD_MMAP:
    case PERF_RECORD_MMAP2: {
      MmapView m;
      m.pid = c.Read<uint32_t>();
      m.tid = c.Read<uint32_t>();
      m.start_avma = c.Read<uint64_t>();
      m.length = c.Read<uint64_t>();
      m.file_offset = c.Read<uint64_t>();
      if (hdr.type == PERF_RECORD_MMAP2) {
        if (hdr.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
          uint8_t size = c.Read<uint8_t>();
          c.Skip(3);
          std::span<const uint8_t> id20 = c.ReadBytes(20);
          if (c.ok()) m.build_id = id20.first(std::min<size_t>(size, 20));
        } else {
          m.dev_major = c.Read<uint32_t>();
          m.dev_minor = c.Read<uint32_t>();
          m.inode = c.Read<uint64_t>();
          c.Skip(8);  // ino_generation
        }
        m.prot = c.Read<uint32_t>();
        m.flags = c.Read<uint32_t>();
      } else {
        m.prot = (hdr.misc & PERF_RECORD_MISC_MMAP_DATA) ? 0 : 4 /* PROT_EXEC */;
      }
      if (!c.ok()) return Truncated(hdr.type);
      m.filename = CString(c.ReadBytes(c.remaining()));
      m.executable = (hdr.misc & PERF_RECORD_MISC_MMAP_DATA) == 0;
      m.time_ns = id.time;
      sink.OnMmap(m);
      return ParseOutcome::kDelivered;
    }
    case PERF_RECORD_COMM: {
      CommView cm;
      cm.pid = c.Read<uint32_t>();
      cm.tid = c.Read<uint32_t>();
      if (!c.ok()) return Truncated(hdr.type);
      cm.comm = CString(c.ReadBytes(c.remaining()));
      cm.exec = (hdr.misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
      cm.time_ns = id.time;
      sink.OnComm(cm);
      return ParseOutcome::kDelivered;
    }
    case PERF_RECORD_FORK:
    case PERF_RECORD_EXIT: {
      TaskView t;
      t.exit = hdr.type == PERF_RECORD_EXIT;
      t.pid = c.Read<uint32_t>();
      t.ppid = c.Read<uint32_t>();
      t.tid = c.Read<uint32_t>();
      t.ptid = c.Read<uint32_t>();
      t.time_ns = c.Read<uint64_t>();
      if (!c.ok()) return Truncated(hdr.type);
      sink.OnTask(t);
      return ParseOutcome::kDelivered;
    }
    case PERF_RECORD_LOST: {
      LostView l;
      c.Skip(8);  // id
      l.lost = c.Read<uint64_t>();
      if (!c.ok()) return Truncated(hdr.type);
      sink.OnLost(l);
      return ParseOutcome::kDelivered;
    }
    case PERF_RECORD_LOST_SAMPLES: {
      LostView l;
      l.lost = c.Read<uint64_t>();
      l.samples_only = true;
      if (!c.ok()) return Truncated(hdr.type);
      sink.OnLost(l);
      return ParseOutcome::kDelivered;
    }
    case PERF_RECORD_READ: {
      // A group read lists every member; nativeprof opens no groups, so it is not ours.
      if (f.read_format & PERF_FORMAT_GROUP) return ParseOutcome::kIgnored;
      ReadView r;
      r.pid = c.Read<uint32_t>();
      r.tid = c.Read<uint32_t>();
      r.value = c.Read<uint64_t>();
      if (f.read_format & PERF_FORMAT_TOTAL_TIME_ENABLED) r.time_enabled = c.Read<uint64_t>();
      if (f.read_format & PERF_FORMAT_TOTAL_TIME_RUNNING) r.time_running = c.Read<uint64_t>();
      if (f.read_format & PERF_FORMAT_ID) r.id = c.Read<uint64_t>();
      if (f.read_format & PERF_FORMAT_LOST) c.Skip(8);
      if (!c.ok()) return Truncated(hdr.type);
      r.time_ns = id.time;
      sink.OnRead(r);
      return ParseOutcome::kDelivered;
    }
    case PERF_RECORD_SWITCH: {
      // The body is empty: who and when are in the sample_id trailer.
      if (!f.sample_id_all || !(f.sample_type & PERF_SAMPLE_TID)) return ParseOutcome::kIgnored;
      SwitchView sw;
      sw.pid = id.pid;
      sw.tid = id.tid;
      sw.out = (hdr.misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
      sw.preempted = sw.out && (hdr.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
      sw.time_ns = id.time;
      sink.OnSwitch(sw);
      return ParseOutcome::kDelivered;
    }
    case PERF_RECORD_THROTTLE:
    case PERF_RECORD_UNTHROTTLE: {
      ThrottleView th;
      th.throttled = hdr.type == PERF_RECORD_THROTTLE;
      th.time_ns = c.Read<uint64_t>();
      if (!c.ok()) return Truncated(hdr.type);
      sink.OnThrottle(th);
      return ParseOutcome::kDelivered;
    }
    default:
      return ParseOutcome::kIgnored;
  }
}

}  // namespace nativeprof::sampler
