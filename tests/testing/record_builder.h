// Test-only builders that produce byte-exact perf ring-buffer records (header included) for a
// given SampleFormat, including the sample_id_all trailer of non-sample records, and RingImage,
// which lays records into a fake perf_event_mmap_page + power-of-two data area at a chosen
// position so records can be made to wrap around the end. Used by unit tests, the record parser
// fuzzer and the ring drain benchmark; single-threaded.
#ifndef NATIVEPROF_TESTS_TESTING_RECORD_BUILDER_H_
#define NATIVEPROF_TESTS_TESTING_RECORD_BUILDER_H_

#include <linux/perf_event.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sampler/record_parser.h"
#include "sampler/ring_buffer.h"

namespace nativeprof::testing {

// The record bytes. operator new aligns them to 16, so data() is a valid ParseRecord input.
using RecordBytes = std::vector<uint8_t>;

// The format nativeprof's sampling events use (IP TID TIME CPU PERIOD CALLCHAIN, sample_id_all).
sampler::SampleFormat FramePointerFormat();
// FramePointerFormat plus REGS_USER (`regs_mask`) and STACK_USER, as --call-graph dwarf asks.
sampler::SampleFormat DwarfFormat(uint64_t regs_mask);

// Appends little-endian fields; Finish() writes the header with the final size.
class RecordWriter {
 public:
  RecordWriter(uint32_t type, uint16_t misc);
  void U8(uint8_t v) { bytes_.push_back(v); }
  void U16(uint16_t v) { Raw(&v, 2); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void Raw(const void* p, size_t n);
  // Appends zero bytes until the size is a multiple of 8.
  void PadTo8();
  // Writes `s`, a terminating NUL, and zero padding to 8 bytes (how the kernel writes names).
  void PaddedString(const std::string& s);
  RecordBytes Finish();

 private:
  RecordBytes bytes_;
};

// The fields of the sample_id trailer (written only for the bits set in sample_type, and only
// when sample_id_all). Unset pid/tid default to the record's own pid/tid.
struct SampleIdFields {
  bool pid_tid_set = false;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  uint64_t identifier = 0;
  void Append(const sampler::SampleFormat& format, uint32_t default_pid, uint32_t default_tid,
              RecordWriter& w) const;
};

// Shared setters of the trailer for the non-sample builders.
template <typename Derived>
class TrailerSetters {
 public:
  explicit TrailerSetters(const sampler::SampleFormat& format) : format_(format) {}
  Derived& Time(uint64_t t) { id_.time = t; return self(); }
  Derived& Cpu(uint32_t c) { id_.cpu = c; return self(); }
  Derived& Id(uint64_t id) { id_.id = id; return self(); }
  Derived& StreamId(uint64_t id) { id_.stream_id = id; return self(); }
  Derived& Identifier(uint64_t id) { id_.identifier = id; return self(); }
  Derived& TrailerPidTid(uint32_t pid, uint32_t tid) {
    id_.pid_tid_set = true;
    id_.pid = pid;
    id_.tid = tid;
    return self();
  }
  Derived& Misc(uint16_t misc) { misc_ = misc; return self(); }

 protected:
  Derived& self() { return static_cast<Derived&>(*this); }
  sampler::SampleFormat format_;
  SampleIdFields id_;
  uint16_t misc_ = 0;
};

// PERF_RECORD_SAMPLE. Fields are written in the kernel's order for the bits of sample_type;
// fields that were not set are written as zeros (callchain/raw/stack as empty).
class SampleBuilder {
 public:
  explicit SampleBuilder(const sampler::SampleFormat& format = FramePointerFormat())
      : format_(format) {}
  SampleBuilder& Misc(uint16_t misc) { misc_ = misc; return *this; }
  SampleBuilder& Identifier(uint64_t v) { identifier_ = v; return *this; }
  SampleBuilder& Ip(uint64_t v) { ip_ = v; return *this; }
  SampleBuilder& Pid(uint32_t v) { pid_ = v; return *this; }
  SampleBuilder& Tid(uint32_t v) { tid_ = v; return *this; }
  SampleBuilder& Time(uint64_t v) { time_ = v; return *this; }
  SampleBuilder& Addr(uint64_t v) { addr_ = v; return *this; }
  SampleBuilder& Id(uint64_t v) { id_ = v; return *this; }
  SampleBuilder& StreamId(uint64_t v) { stream_id_ = v; return *this; }
  SampleBuilder& Cpu(uint32_t v) { cpu_ = v; return *this; }
  SampleBuilder& Period(uint64_t v) { period_ = v; return *this; }
  // The PERF_SAMPLE_READ block exactly as laid out by read_format (the builder does not check it).
  SampleBuilder& ReadValues(std::vector<uint64_t> v) { read_ = std::move(v); return *this; }
  // Entries including PERF_CONTEXT_* markers, leaf first.
  SampleBuilder& Callchain(std::vector<uint64_t> v) { callchain_ = std::move(v); return *this; }
  // PERF_SAMPLE_RAW payload; padded with zeros so u32 size + data is a multiple of 8, like the
  // kernel does (the size field includes the padding).
  SampleBuilder& Raw(std::vector<uint8_t> v) { raw_ = std::move(v); return *this; }
  // `values` are written only when abi != PERF_SAMPLE_REGS_ABI_NONE.
  SampleBuilder& RegsUser(uint64_t abi, std::vector<uint64_t> values) {
    regs_abi_ = abi;
    regs_ = std::move(values);
    return *this;
  }
  // size = bytes.size() (0: only the size field, no dyn_size follows), then dyn_size.
  SampleBuilder& StackUser(std::vector<uint8_t> bytes, uint64_t dyn_size) {
    stack_ = std::move(bytes);
    dyn_size_ = dyn_size;
    return *this;
  }
  RecordBytes Build() const;

 private:
  sampler::SampleFormat format_;
  uint16_t misc_ = PERF_RECORD_MISC_USER;
  uint64_t identifier_ = 0, ip_ = 0, time_ = 0, addr_ = 0, id_ = 0, stream_id_ = 0, period_ = 0;
  uint32_t pid_ = 0, tid_ = 0, cpu_ = 0;
  std::vector<uint64_t> read_, callchain_, regs_;
  std::vector<uint8_t> raw_, stack_;
  uint64_t regs_abi_ = PERF_SAMPLE_REGS_ABI_NONE;
  uint64_t dyn_size_ = 0;
};

// PERF_RECORD_MMAP2 (or MMAP with Mmap1()). Dev/inode form by default; BuildId() switches to the
// build-id form and sets PERF_RECORD_MISC_MMAP_BUILD_ID.
class MmapBuilder : public TrailerSetters<MmapBuilder> {
 public:
  explicit MmapBuilder(const sampler::SampleFormat& format = FramePointerFormat())
      : TrailerSetters(format) {}
  MmapBuilder& Pid(uint32_t v) { pid_ = v; return *this; }
  MmapBuilder& Tid(uint32_t v) { tid_ = v; return *this; }
  MmapBuilder& Start(uint64_t v) { start_ = v; return *this; }
  MmapBuilder& Len(uint64_t v) { len_ = v; return *this; }
  MmapBuilder& Pgoff(uint64_t v) { pgoff_ = v; return *this; }
  MmapBuilder& Dev(uint32_t major, uint32_t minor) { maj_ = major; min_ = minor; return *this; }
  MmapBuilder& Inode(uint64_t v) { ino_ = v; return *this; }
  MmapBuilder& InoGeneration(uint64_t v) { ino_gen_ = v; return *this; }
  MmapBuilder& BuildId(std::vector<uint8_t> id) {
    build_id_ = std::move(id);
    use_build_id_ = true;
    return *this;
  }
  MmapBuilder& Prot(uint32_t v) { prot_ = v; return *this; }
  MmapBuilder& Flags(uint32_t v) { flags_ = v; return *this; }
  // NUL-terminated and zero-padded to 8, as the kernel writes it.
  MmapBuilder& Filename(std::string name) { filename_ = std::move(name); raw_name_ = false; return *this; }
  // Exactly these bytes, zero-padded to 8 only if not already a multiple of 8 (so a name of 8k
  // bytes has no NUL before the trailer).
  MmapBuilder& FilenameBytes(std::string bytes) { filename_ = std::move(bytes); raw_name_ = true; return *this; }
  // Sets PERF_RECORD_MISC_MMAP_DATA (a non-executable mapping).
  MmapBuilder& Data(bool data) { data_ = data; return *this; }
  // Emits the old PERF_RECORD_MMAP layout (no dev/inode/prot/flags).
  MmapBuilder& Mmap1() { mmap1_ = true; return *this; }
  RecordBytes Build() const;

 private:
  uint32_t pid_ = 0, tid_ = 0, maj_ = 0, min_ = 0, prot_ = 5 /* PROT_READ|PROT_EXEC */, flags_ = 2;
  uint64_t start_ = 0, len_ = 0, pgoff_ = 0, ino_ = 0, ino_gen_ = 0;
  std::vector<uint8_t> build_id_;
  bool use_build_id_ = false, data_ = false, mmap1_ = false, raw_name_ = false;
  std::string filename_;
};

// PERF_RECORD_COMM; Exec() sets PERF_RECORD_MISC_COMM_EXEC.
class CommBuilder : public TrailerSetters<CommBuilder> {
 public:
  explicit CommBuilder(const sampler::SampleFormat& format = FramePointerFormat())
      : TrailerSetters(format) {}
  CommBuilder& Pid(uint32_t v) { pid_ = v; return *this; }
  CommBuilder& Tid(uint32_t v) { tid_ = v; return *this; }
  CommBuilder& Comm(std::string c) { comm_ = std::move(c); return *this; }
  CommBuilder& Exec(bool e) { exec_ = e; return *this; }
  RecordBytes Build() const;

 private:
  uint32_t pid_ = 0, tid_ = 0;
  std::string comm_;
  bool exec_ = false;
};

// PERF_RECORD_FORK / PERF_RECORD_EXIT. Time() sets both the body's time and the trailer's.
template <uint32_t kType>
class TaskBuilder : public TrailerSetters<TaskBuilder<kType>> {
 public:
  explicit TaskBuilder(const sampler::SampleFormat& format = FramePointerFormat())
      : TrailerSetters<TaskBuilder<kType>>(format) {}
  TaskBuilder& Pid(uint32_t v) { pid_ = v; return *this; }
  TaskBuilder& Ppid(uint32_t v) { ppid_ = v; return *this; }
  TaskBuilder& Tid(uint32_t v) { tid_ = v; return *this; }
  TaskBuilder& Ptid(uint32_t v) { ptid_ = v; return *this; }
  RecordBytes Build() const {
    RecordWriter w(kType, this->misc_);
    w.U32(pid_);
    w.U32(ppid_);
    w.U32(tid_);
    w.U32(ptid_);
    w.U64(this->id_.time);
    this->id_.Append(this->format_, pid_, tid_, w);
    return w.Finish();
  }

 private:
  uint32_t pid_ = 0, ppid_ = 0, tid_ = 0, ptid_ = 0;
};
using ForkBuilder = TaskBuilder<PERF_RECORD_FORK>;
using ExitBuilder = TaskBuilder<PERF_RECORD_EXIT>;

// PERF_RECORD_READ: {pid, tid}, then the non-group values read_format asks for (value,
// [enabled], [running], [id], [lost]).
class ReadBuilder : public TrailerSetters<ReadBuilder> {
 public:
  explicit ReadBuilder(const sampler::SampleFormat& format) : TrailerSetters(format) {}
  ReadBuilder& Pid(uint32_t v) { pid_ = v; return *this; }
  ReadBuilder& Tid(uint32_t v) { tid_ = v; return *this; }
  ReadBuilder& Value(uint64_t v) { value_ = v; return *this; }
  ReadBuilder& Enabled(uint64_t v) { enabled_ = v; return *this; }
  ReadBuilder& Running(uint64_t v) { running_ = v; return *this; }
  ReadBuilder& EventId(uint64_t v) { event_id_ = v; return *this; }
  RecordBytes Build() const {
    RecordWriter w(PERF_RECORD_READ, misc_);
    w.U32(pid_);
    w.U32(tid_);
    w.U64(value_);
    const uint64_t rf = format_.read_format;
    if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED) w.U64(enabled_);
    if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING) w.U64(running_);
    if (rf & PERF_FORMAT_ID) w.U64(event_id_);
    if (rf & PERF_FORMAT_LOST) w.U64(0);
    id_.Append(format_, pid_, tid_, w);
    return w.Finish();
  }

 private:
  uint32_t pid_ = 0, tid_ = 0;
  uint64_t value_ = 0, enabled_ = 0, running_ = 0, event_id_ = 0;
};

// PERF_RECORD_LOST ({id, lost}) or, with SamplesOnly(), PERF_RECORD_LOST_SAMPLES ({lost}).
class LostBuilder : public TrailerSetters<LostBuilder> {
 public:
  explicit LostBuilder(const sampler::SampleFormat& format = FramePointerFormat())
      : TrailerSetters(format) {}
  LostBuilder& EventId(uint64_t v) { event_id_ = v; return *this; }
  LostBuilder& Lost(uint64_t v) { lost_ = v; return *this; }
  LostBuilder& SamplesOnly() { samples_only_ = true; return *this; }
  RecordBytes Build() const;

 private:
  uint64_t event_id_ = 0, lost_ = 0;
  bool samples_only_ = false;
};

// PERF_RECORD_THROTTLE / UNTHROTTLE ({time, id, stream_id}).
class ThrottleBuilder : public TrailerSetters<ThrottleBuilder> {
 public:
  explicit ThrottleBuilder(bool throttle,
                           const sampler::SampleFormat& format = FramePointerFormat())
      : TrailerSetters(format), throttle_(throttle) {}
  RecordBytes Build() const;

 private:
  bool throttle_;
};

// PERF_RECORD_SWITCH: no body; who and when are in the trailer (set them with TrailerPidTid and
// Time). Misc carries PERF_RECORD_MISC_SWITCH_OUT(_PREEMPT).
class SwitchBuilder : public TrailerSetters<SwitchBuilder> {
 public:
  explicit SwitchBuilder(bool out, bool preempted = false,
                         const sampler::SampleFormat& format = FramePointerFormat())
      : TrailerSetters(format) {
    misc_ = static_cast<uint16_t>((out ? PERF_RECORD_MISC_SWITCH_OUT : 0) |
                                  (out && preempted ? PERF_RECORD_MISC_SWITCH_OUT_PREEMPT : 0));
  }
  RecordBytes Build() const;
};

// A fake perf mmap: metadata page plus a power-of-two data area (8-byte aligned), with
// data_tail = data_head = `start` initially. Append() writes like the kernel does: at data_head,
// wrapping around the end, then publishes the new data_head. Header-only so the fuzzer (which
// does not link the test library) can use it.
class RingImage {
 public:
  RingImage(size_t data_size, uint64_t start)
      : meta_(new perf_event_mmap_page{}), data_((data_size + 7) / 8), data_size_(data_size) {
    meta_->data_head = start;
    meta_->data_tail = start;
    meta_->data_size = data_size;
  }

  // Writes `bytes` at data_head (wrapping) and advances data_head. False (nothing written) if the
  // space between data_tail and data_head cannot take them, as the kernel would drop the record.
  bool Append(std::span<const uint8_t> bytes) {
    const uint64_t head = meta_->data_head;
    if (head - meta_->data_tail + bytes.size() > data_size_) return false;
    uint8_t* data = this->data();
    for (size_t i = 0; i < bytes.size(); ++i) data[(head + i) & (data_size_ - 1)] = bytes[i];
    meta_->data_head = head + bytes.size();
    return true;
  }
  // Sets data_head/data_tail directly (corrupt rings, rewinding a benchmark pass).
  void SetHead(uint64_t head) { meta_->data_head = head; }
  void SetTail(uint64_t tail) { meta_->data_tail = tail; }
  uint64_t head() const { return meta_->data_head; }
  uint64_t tail() const { return meta_->data_tail; }

  // A reader over this image; the image must outlive it.
  sampler::RingBuffer Reader() { return sampler::RingBuffer(meta_.get(), data(), data_size_); }

  perf_event_mmap_page* meta() { return meta_.get(); }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(data_.data()); }
  size_t data_size() const { return data_size_; }

 private:
  std::unique_ptr<perf_event_mmap_page> meta_;
  std::vector<uint64_t> data_;
  size_t data_size_;
};

}  // namespace nativeprof::testing

#endif  // NATIVEPROF_TESTS_TESTING_RECORD_BUILDER_H_
