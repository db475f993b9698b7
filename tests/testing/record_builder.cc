#include "tests/testing/record_builder.h"

#include <algorithm>
#include <cstring>

namespace nativeprof::testing {

sampler::SampleFormat FramePointerFormat() {
  sampler::SampleFormat f;
  f.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                  PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
  f.sample_id_all = true;
  return f;
}

sampler::SampleFormat DwarfFormat(uint64_t regs_mask) {
  sampler::SampleFormat f = FramePointerFormat();
  f.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  f.regs_user_mask = regs_mask;
  return f;
}

RecordWriter::RecordWriter(uint32_t type, uint16_t misc) {
  U32(type);
  U16(misc);
  U16(0);  // size, patched by Finish()
}

void RecordWriter::Raw(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  bytes_.insert(bytes_.end(), b, b + n);
}

void RecordWriter::PadTo8() {
  while (bytes_.size() % 8 != 0) bytes_.push_back(0);
}

void RecordWriter::PaddedString(const std::string& s) {
  Raw(s.data(), s.size());
  U8(0);
  PadTo8();
}

RecordBytes RecordWriter::Finish() {
  // The header's u16 size cannot describe more; tests that need a lying size patch it afterwards.
  const uint16_t size = static_cast<uint16_t>(bytes_.size());
  std::memcpy(bytes_.data() + 6, &size, 2);
  return std::move(bytes_);
}

void SampleIdFields::Append(const sampler::SampleFormat& f, uint32_t default_pid,
                            uint32_t default_tid, RecordWriter& w) const {
  if (!f.sample_id_all) return;
  const uint64_t st = f.sample_type;
  if (st & PERF_SAMPLE_TID) {
    w.U32(pid_tid_set ? pid : default_pid);
    w.U32(pid_tid_set ? tid : default_tid);
  }
  if (st & PERF_SAMPLE_TIME) w.U64(time);
  if (st & PERF_SAMPLE_ID) w.U64(id);
  if (st & PERF_SAMPLE_STREAM_ID) w.U64(stream_id);
  if (st & PERF_SAMPLE_CPU) {
    w.U32(cpu);
    w.U32(0);
  }
  if (st & PERF_SAMPLE_IDENTIFIER) w.U64(identifier);
}

RecordBytes SampleBuilder::Build() const {
  const uint64_t st = format_.sample_type;
  RecordWriter w(PERF_RECORD_SAMPLE, misc_);
  if (st & PERF_SAMPLE_IDENTIFIER) w.U64(identifier_);
  if (st & PERF_SAMPLE_IP) w.U64(ip_);
  if (st & PERF_SAMPLE_TID) {
    w.U32(pid_);
    w.U32(tid_);
  }
  if (st & PERF_SAMPLE_TIME) w.U64(time_);
  if (st & PERF_SAMPLE_ADDR) w.U64(addr_);
  if (st & PERF_SAMPLE_ID) w.U64(id_);
  if (st & PERF_SAMPLE_STREAM_ID) w.U64(stream_id_);
  if (st & PERF_SAMPLE_CPU) {
    w.U32(cpu_);
    w.U32(0);
  }
  if (st & PERF_SAMPLE_PERIOD) w.U64(period_);
  if (st & PERF_SAMPLE_READ) {
    for (uint64_t v : read_) w.U64(v);
  }
  if (st & PERF_SAMPLE_CALLCHAIN) {
    w.U64(callchain_.size());
    for (uint64_t v : callchain_) w.U64(v);
  }
  if (st & PERF_SAMPLE_RAW) {
    const size_t padded = (4 + raw_.size() + 7) / 8 * 8 - 4;
    w.U32(static_cast<uint32_t>(padded));
    w.Raw(raw_.data(), raw_.size());
    for (size_t i = raw_.size(); i < padded; ++i) w.U8(0);
  }
  if (st & PERF_SAMPLE_REGS_USER) {
    w.U64(regs_abi_);
    if (regs_abi_ != PERF_SAMPLE_REGS_ABI_NONE) {
      for (uint64_t v : regs_) w.U64(v);
    }
  }
  if (st & PERF_SAMPLE_STACK_USER) {
    w.U64(stack_.size());
    if (!stack_.empty()) {
      w.Raw(stack_.data(), stack_.size());
      w.U64(dyn_size_);
    }
  }
  return w.Finish();
}

RecordBytes MmapBuilder::Build() const {
  uint16_t misc = misc_;
  if (data_) misc |= PERF_RECORD_MISC_MMAP_DATA;
  if (use_build_id_ && !mmap1_) misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
  RecordWriter w(mmap1_ ? PERF_RECORD_MMAP : PERF_RECORD_MMAP2, misc);
  w.U32(pid_);
  w.U32(tid_);
  w.U64(start_);
  w.U64(len_);
  w.U64(pgoff_);
  if (!mmap1_) {
    if (use_build_id_) {
      w.U8(static_cast<uint8_t>(build_id_.size()));
      w.U8(0);
      w.U16(0);
      uint8_t id[20] = {};
      std::memcpy(id, build_id_.data(), std::min<size_t>(build_id_.size(), 20));
      w.Raw(id, 20);
    } else {
      w.U32(maj_);
      w.U32(min_);
      w.U64(ino_);
      w.U64(ino_gen_);
    }
    w.U32(prot_);
    w.U32(flags_);
  }
  if (raw_name_) {
    w.Raw(filename_.data(), filename_.size());
    w.PadTo8();
  } else {
    w.PaddedString(filename_);
  }
  id_.Append(format_, pid_, tid_, w);
  return w.Finish();
}

RecordBytes CommBuilder::Build() const {
  RecordWriter w(PERF_RECORD_COMM, misc_ | (exec_ ? PERF_RECORD_MISC_COMM_EXEC : 0));
  w.U32(pid_);
  w.U32(tid_);
  w.PaddedString(comm_);
  id_.Append(format_, pid_, tid_, w);
  return w.Finish();
}

RecordBytes LostBuilder::Build() const {
  RecordWriter w(samples_only_ ? PERF_RECORD_LOST_SAMPLES : PERF_RECORD_LOST, misc_);
  if (!samples_only_) w.U64(event_id_);
  w.U64(lost_);
  id_.Append(format_, 0, 0, w);
  return w.Finish();
}

RecordBytes ThrottleBuilder::Build() const {
  RecordWriter w(throttle_ ? PERF_RECORD_THROTTLE : PERF_RECORD_UNTHROTTLE, misc_);
  w.U64(id_.time);
  w.U64(id_.id);
  w.U64(id_.stream_id);
  id_.Append(format_, 0, 0, w);
  return w.Finish();
}

RecordBytes SwitchBuilder::Build() const {
  RecordWriter w(PERF_RECORD_SWITCH, misc_);
  id_.Append(format_, 0, 0, w);
  return w.Finish();
}

}  // namespace nativeprof::testing
