// Builds the seed corpus of tests/fuzz/record_parser_fuzzer.cc from the record builders and checks
// that every checked-in seed is current. Regenerate with
//   NATIVEPROF_WRITE_FUZZ_CORPUS=1 build/tests/unit/sampler_unit_test --gtest_filter='RecordFuzzCorpus*'
#include <linux/perf_event.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/record_parser.h"
#include "tests/testing/record_builder.h"
#include "tests/testing/test_support.h"
#include "tests/unit/sampler/recording_sink.h"

namespace nativeprof::sampler {
namespace {

using ::nativeprof::testing::CommBuilder;
using ::nativeprof::testing::ExitBuilder;
using ::nativeprof::testing::ForkBuilder;
using ::nativeprof::testing::LostBuilder;
using ::nativeprof::testing::MmapBuilder;
using ::nativeprof::testing::ReadBuilder;
using ::nativeprof::testing::RecordBytes;
using ::nativeprof::testing::SampleBuilder;
using ::nativeprof::testing::SwitchBuilder;
using ::nativeprof::testing::ThrottleBuilder;

// Must match kSampleBits / kReadBits in the fuzzer: the seed's first 8 bytes select the format.
constexpr uint64_t kSampleBits[] = {
    PERF_SAMPLE_IP,        PERF_SAMPLE_TID,        PERF_SAMPLE_TIME,       PERF_SAMPLE_CPU,
    PERF_SAMPLE_PERIOD,    PERF_SAMPLE_CALLCHAIN,  PERF_SAMPLE_REGS_USER,  PERF_SAMPLE_STACK_USER,
    PERF_SAMPLE_READ,      PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_ID,         PERF_SAMPLE_STREAM_ID,
    PERF_SAMPLE_ADDR,      PERF_SAMPLE_RAW,
};
constexpr uint64_t kReadBits[] = {PERF_FORMAT_TOTAL_TIME_ENABLED, PERF_FORMAT_TOTAL_TIME_RUNNING,
                                  PERF_FORMAT_ID, PERF_FORMAT_GROUP, PERF_FORMAT_LOST};
constexpr uint64_t kUser = static_cast<uint64_t>(PERF_CONTEXT_USER);
constexpr uint64_t kKernel = static_cast<uint64_t>(PERF_CONTEXT_KERNEL);

struct Seed {
  std::string name;
  std::vector<uint8_t> bytes;  // 8-byte format prefix + records
  bool valid = true;           // every record in it parses
};

struct FormatChoice {
  SampleFormat format;
  std::vector<uint8_t> prefix;
};

FormatChoice Choose(uint64_t sample_type, unsigned regs, uint64_t read_format, bool id_all,
                    uint8_t position) {
  FormatChoice c;
  uint16_t selector = 0;
  for (size_t i = 0; i < std::size(kSampleBits); ++i) {
    if (sample_type & kSampleBits[i]) selector |= static_cast<uint16_t>(1u << i);
  }
  uint8_t read = 0;
  for (size_t i = 0; i < std::size(kReadBits); ++i) {
    if (read_format & kReadBits[i]) read |= static_cast<uint8_t>(1u << i);
  }
  c.prefix = {static_cast<uint8_t>(selector), static_cast<uint8_t>(selector >> 8),
              static_cast<uint8_t>(regs), read, static_cast<uint8_t>(id_all ? 1 : 0), position,
              0, 0};
  c.format.sample_type = sample_type;
  c.format.regs_user_mask = regs == 0 ? 0 : (uint64_t{1} << regs) - 1;
  c.format.read_format = read_format;
  c.format.sample_id_all = id_all;
  return c;
}

std::vector<Seed> MakeSeeds() {
  std::vector<Seed> seeds;
  auto add = [&](const std::string& name, const FormatChoice& c,
                 std::vector<RecordBytes> records, bool valid = true) {
    Seed s{name, c.prefix, valid};
    for (const RecordBytes& r : records) s.bytes.insert(s.bytes.end(), r.begin(), r.end());
    seeds.push_back(std::move(s));
  };
  const uint64_t fp_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                           PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
  const FormatChoice fp = Choose(fp_type, 0, 0, true, 0);
  const FormatChoice fp_wrap = Choose(fp_type, 0, 0, true, 6);  // 48 bytes before a 64-byte end
  const FormatChoice fp_noid = Choose(fp_type, 0, 0, false, 0);
  const FormatChoice dwarf =
      Choose(fp_type | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER, 17, 0, true, 3);
  const FormatChoice all = Choose(fp_type | PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID |
                                      PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_ADDR | PERF_SAMPLE_RAW |
                                      PERF_SAMPLE_READ,
                                  0, PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_ID, true, 1);
  const FormatChoice group =
      Choose(fp_type | PERF_SAMPLE_READ, 0, PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_LOST,
             true, 2);

  std::vector<uint64_t> chain = {kKernel, 0xffffffff81000100, 0xffffffff81000200, kUser,
                                 0x401000, 0x402000, 0x403000};
  RecordBytes fp_sample = SampleBuilder(fp.format).Pid(7).Tid(8).Ip(0xffffffff81000100)
                              .Time(1000).Cpu(1).Period(1001001).Callchain(chain).Build();
  add("sample_fp_kernel_user", fp, {fp_sample});
  add("sample_fp_wraps", fp_wrap, {fp_sample, fp_sample});
  add("sample_fp_user_only", fp, {SampleBuilder(fp.format).Pid(7).Tid(7).Ip(0x401000)
                                      .Callchain({kUser, 0x401000, 0x402000}).Build()});
  add("sample_empty_callchain", fp, {SampleBuilder(fp.format).Pid(1).Tid(1).Ip(5).Build()});
  std::vector<uint8_t> stack(64);
  for (size_t i = 0; i < stack.size(); ++i) stack[i] = static_cast<uint8_t>(i * 3);
  std::vector<uint64_t> regs(17);
  for (size_t i = 0; i < regs.size(); ++i) regs[i] = 0x7ffc0000 + i * 8;
  add("sample_regs_stack", dwarf, {SampleBuilder(dwarf.format).Pid(3).Tid(3).Ip(0x401000)
                                       .Callchain({kUser, 0x401000})
                                       .RegsUser(PERF_SAMPLE_REGS_ABI_64, regs)
                                       .StackUser(stack, 40).Build()});
  add("sample_regs_abi_none", dwarf, {SampleBuilder(dwarf.format).Pid(3).Tid(3)
                                          .RegsUser(PERF_SAMPLE_REGS_ABI_NONE, {})
                                          .StackUser({}, 0).Build()});
  add("sample_stack_size_zero", dwarf, {SampleBuilder(dwarf.format)
                                            .RegsUser(PERF_SAMPLE_REGS_ABI_64, regs)
                                            .StackUser({}, 0).Build()});
  add("sample_every_field", all, {SampleBuilder(all.format).Identifier(9).Ip(1).Pid(2).Tid(3)
                                      .Time(4).Addr(5).Id(6).StreamId(7).Cpu(1).Period(8)
                                      .ReadValues({10, 11, 12}).Callchain({kUser, 1, 2})
                                      .Raw({1, 2, 3, 4, 5}).Build()});
  add("sample_read_group_lost", group, {SampleBuilder(group.format).Ip(1)
                                            .ReadValues({2, 10, 1, 0, 20, 2, 0})
                                            .Callchain({kUser, 1}).Build()});

  for (const FormatChoice* c : {&fp, &fp_noid, &all}) {
    const std::string suffix = c == &fp ? "" : c == &fp_noid ? "_no_id_all" : "_all_ids";
    add("mmap2_inode" + suffix, *c, {MmapBuilder(c->format).Pid(7).Tid(7).Start(0x400000)
                                         .Len(0x2000).Pgoff(0x1000).Dev(8, 1).Inode(42)
                                         .Filename("/usr/bin/app").Time(5).Build()});
    add("mmap2_build_id" + suffix, *c, {MmapBuilder(c->format).Pid(7).Tid(7).Start(0x7f0000000000)
                                            .Len(0x1000).BuildId(std::vector<uint8_t>(20, 0xab))
                                            .Filename("/lib/libc.so.6").Time(6).Build()});
    add("comm_exec" + suffix, *c, {CommBuilder(c->format).Pid(7).Tid(7).Comm("workload")
                                       .Exec(true).Time(7).Build()});
    add("fork" + suffix, *c, {ForkBuilder(c->format).Pid(9).Ppid(7).Tid(9).Ptid(7).Time(8)
                                  .Build()});
    add("exit" + suffix, *c, {ExitBuilder(c->format).Pid(9).Ppid(7).Tid(9).Ptid(7).Time(9)
                                  .Build()});
    add("lost" + suffix, *c, {LostBuilder(c->format).EventId(1).Lost(12).Build()});
  }
  add("mmap1_data", fp, {MmapBuilder(fp.format).Mmap1().Data(true).Pid(1).Start(0x600000)
                             .Len(0x1000).Filename("/x").Build()});
  add("mmap2_name_no_nul", fp, {MmapBuilder(fp.format).Start(0x1000).Len(0x1000)
                                    .FilenameBytes("abcdefgh").Build()});
  add("comm_thread", fp, {CommBuilder(fp.format).Pid(7).Tid(8).Comm("worker-1").Build()});
  add("lost_samples", fp, {LostBuilder(fp.format).SamplesOnly().Lost(3).Build()});
  add("throttle", fp, {ThrottleBuilder(true, fp.format).Time(10).Build(),
                       ThrottleBuilder(false, fp.format).Time(11).Build()});
  // `stat --per-thread`'s side band: the fuzzer's CounterSideband knows event id 1.
  const FormatChoice counting =
      Choose(PERF_SAMPLE_TID | PERF_SAMPLE_TIME, 0,
             PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID, true,
             5);
  add("read_side_band", counting,
      {CommBuilder(counting.format).Pid(7).Tid(7).Comm("app").Time(1).Build(),
       ForkBuilder(counting.format).Pid(7).Ppid(7).Tid(8).Ptid(7).Time(2).TrailerPidTid(7, 7)
           .Build(),
       ReadBuilder(counting.format).Pid(7).Tid(8).Value(500).Enabled(90).Running(80).EventId(1)
           .Time(4).Build(),
       ReadBuilder(counting.format).Pid(7).Tid(8).Value(5).EventId(2).Time(3).Build()});
  // --off-cpu: samples with PERF_SAMPLE_IDENTIFIER (which event took them) and switch records.
  const FormatChoice off_cpu = Choose(fp_type | PERF_SAMPLE_IDENTIFIER, 0, 0, true, 4);
  add("off_cpu_switch_pair", off_cpu,
      {SampleBuilder(off_cpu.format).Identifier(77).Pid(7).Tid(8).Ip(0xffffffff81000100)
           .Time(100).Period(1).Callchain(chain).Build(),
       SwitchBuilder(true, false, off_cpu.format).TrailerPidTid(7, 8).Time(101).Build(),
       SwitchBuilder(true, true, off_cpu.format).TrailerPidTid(7, 9).Time(102).Build(),
       SwitchBuilder(false, false, off_cpu.format).TrailerPidTid(7, 8).Time(900).Build()});
  // Without sample_id_all a switch record names no task: ignored, so not "valid".
  add("switch_no_id_all", fp_noid, {SwitchBuilder(true, false, fp_noid.format).Build()},
      /*valid=*/false);
  const FormatChoice read_lost =
      Choose(PERF_SAMPLE_TID | PERF_SAMPLE_TIME, 0, PERF_FORMAT_ID | PERF_FORMAT_LOST, true, 0);
  add("read_format_lost", read_lost,
      {ReadBuilder(read_lost.format).Pid(1).Tid(2).Value(3).EventId(1).Time(4).Build()});
  add("session_mix", fp_wrap,
      {CommBuilder(fp.format).Pid(7).Tid(7).Comm("app").Exec(true).Build(),
       MmapBuilder(fp.format).Pid(7).Tid(7).Start(0x400000).Len(0x2000).Filename("/app").Build(),
       fp_sample, ForkBuilder(fp.format).Pid(7).Ppid(7).Tid(8).Ptid(7).Build(), fp_sample,
       ExitBuilder(fp.format).Pid(7).Ppid(7).Tid(8).Ptid(7).Build()});

  // Truncated variants: cut inside the header, inside fixed fields, inside the callchain, and a
  // header whose size was rewritten to the cut.
  for (size_t cut : {size_t{4}, size_t{20}, size_t{fp_sample.size() - 8}}) {
    RecordBytes r(fp_sample.begin(), fp_sample.begin() + cut);
    add("truncated_sample_" + std::to_string(cut), fp, {r}, false);
  }
  {
    RecordBytes r(fp_sample.begin(), fp_sample.begin() + 48);
    r[6] = 48;
    r[7] = 0;
    add("truncated_sample_resized", fp, {r}, false);
    RecordBytes m = MmapBuilder(fp.format).Start(1).Len(1).Filename("/lib/x.so").Build();
    m.resize(40);
    m[6] = 40;
    m[7] = 0;
    add("truncated_mmap_resized", fp, {m}, false);
    RecordBytes zero(16, 0);
    add("header_size_zero", fp, {zero}, false);
  }
  return seeds;
}

// Parses the records of a seed the way the fuzzer's ring pass does: one after another.
bool AllParse(const Seed& s, const SampleFormat& f) {
  std::vector<uint64_t> aligned((s.bytes.size() - 8 + 7) / 8 + 1);
  std::memcpy(aligned.data(), s.bytes.data() + 8, s.bytes.size() - 8);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(aligned.data());
  size_t left = s.bytes.size() - 8, off = 0;
  RecordingSink sink;
  while (off < left) {
    if (left - off < 8) return false;
    uint16_t size;
    std::memcpy(&size, p + off + 6, 2);
    if (size < 8 || size > left - off) return false;
    absl::StatusOr<ParseOutcome> o = ParseRecord(std::span<const uint8_t>(p + off, size), f, sink);
    if (!o.ok() || *o != ParseOutcome::kDelivered) return false;
    off += size;
  }
  return true;
}

TEST(RecordFuzzCorpusTest, SeedsParseAndMatchTheCheckedInCorpus) {
  const std::string dir = testing::SourcePath("tests/fuzz/corpus/record_parser_fuzzer");
  const bool write = std::getenv("NATIVEPROF_WRITE_FUZZ_CORPUS") != nullptr;
  std::vector<Seed> seeds = MakeSeeds();
  EXPECT_GE(seeds.size(), 24u);
  for (const Seed& s : seeds) {
    SCOPED_TRACE(s.name);
    SampleFormat f;
    const uint16_t selector = static_cast<uint16_t>(s.bytes[0] | (s.bytes[1] << 8));
    for (size_t i = 0; i < std::size(kSampleBits); ++i) {
      if (selector & (1u << i)) f.sample_type |= kSampleBits[i];
    }
    const unsigned regs = s.bytes[2] % 25;
    f.regs_user_mask = regs == 0 ? 0 : (uint64_t{1} << regs) - 1;
    for (size_t i = 0; i < std::size(kReadBits); ++i) {
      if (s.bytes[3] & (1u << i)) f.read_format |= kReadBits[i];
    }
    f.sample_id_all = (s.bytes[4] & 1) != 0;
    EXPECT_EQ(AllParse(s, f), s.valid);
    const std::string path = dir + "/" + s.name;
    if (write) {
      std::filesystem::create_directories(dir);
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char*>(s.bytes.data()),
                 static_cast<std::streamsize>(s.bytes.size()));
    }
    const std::string on_disk = testing::ReadFileOrEmpty(path);
    EXPECT_EQ(on_disk, std::string(s.bytes.begin(), s.bytes.end()))
        << path << " is stale; regenerate with NATIVEPROF_WRITE_FUZZ_CORPUS=1";
  }
}

}  // namespace
}  // namespace nativeprof::sampler
