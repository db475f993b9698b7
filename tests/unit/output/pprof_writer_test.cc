#include "output/pprof_writer.h"

#include <gmock/gmock.h>

#include <map>
#include <string>
#include <vector>

#include "output/folded_reader.h"
#include "output/protobuf_encoder.h"
#include "symbolize/profile.h"
#include "tests/testing/test_support.h"
#include "tests/unit/output/wire_decoder.h"

namespace nativeprof::output {
namespace {

using symbolize::Profile;
using symbolize::ProfileFrame;
using symbolize::ProfileFrameKind;
using symbolize::ProfileStack;
using testing::DecodeMessage;
using testing::DecodePacked;
using testing::WireField;

// The parts of a decoded profile the tests look at.
struct Decoded {
  std::vector<std::string> strings;
  std::vector<std::pair<std::string, std::string>> sample_types;
  struct Sample {
    std::vector<uint64_t> locations;
    std::vector<uint64_t> values;
    std::map<std::string, std::string> labels;  // num labels as decimal text
  };
  std::vector<Sample> samples;
  struct Location {
    uint64_t mapping = 0, address = 0;
    std::vector<uint64_t> functions;  // per line, innermost first
  };
  std::map<uint64_t, Location> locations;
  std::map<uint64_t, std::string> functions;  // id -> name
  struct Mapping {
    std::string file, build_id;
    uint64_t limit = 0;
  };
  std::map<uint64_t, Mapping> mappings;
  std::vector<uint64_t> mapping_order;  // ids as written
  uint64_t default_sample_type = 0;
  std::pair<std::string, std::string> period_type;
  uint64_t period = 0;
  std::string comment;
};

Decoded Decode(const std::string& bytes) {
  Decoded d;
  std::vector<WireField> top;
  EXPECT_TRUE(DecodeMessage(bytes, &top));
  for (const WireField& f : top) {
    if (f.field == 6) d.strings.push_back(f.bytes);
  }
  auto str = [&](uint64_t i) { return i < d.strings.size() ? d.strings[i] : std::string("?"); };
  for (const WireField& f : top) {
    std::vector<WireField> sub;
    if (f.field >= 1 && f.field <= 5) EXPECT_TRUE(DecodeMessage(f.bytes, &sub)) << f.field;
    if (f.field == 1) {
      std::pair<std::string, std::string> vt;
      for (const WireField& s : sub) (s.field == 1 ? vt.first : vt.second) = str(s.varint);
      d.sample_types.push_back(vt);
    } else if (f.field == 2) {
      Decoded::Sample smp;
      for (const WireField& s : sub) {
        if (s.field == 1) smp.locations = DecodePacked(s.bytes);
        if (s.field == 2) smp.values = DecodePacked(s.bytes);
        if (s.field == 3) {
          std::vector<WireField> label;
          EXPECT_TRUE(DecodeMessage(s.bytes, &label));
          std::string key, value;
          for (const WireField& l : label) {
            if (l.field == 1) key = str(l.varint);
            if (l.field == 2) value = str(l.varint);
            if (l.field == 3) value = std::to_string(l.varint);
          }
          smp.labels[key] = value;
        }
      }
      d.samples.push_back(smp);
    } else if (f.field == 3) {
      uint64_t id = 0;
      Decoded::Mapping m;
      for (const WireField& s : sub) {
        if (s.field == 1) id = s.varint;
        if (s.field == 3) m.limit = s.varint;
        if (s.field == 5) m.file = str(s.varint);
        if (s.field == 6) m.build_id = str(s.varint);
      }
      d.mappings[id] = m;
      d.mapping_order.push_back(id);
    } else if (f.field == 4) {
      uint64_t id = 0;
      Decoded::Location loc;
      for (const WireField& s : sub) {
        if (s.field == 1) id = s.varint;
        if (s.field == 2) loc.mapping = s.varint;
        if (s.field == 3) loc.address = s.varint;
        if (s.field == 4) {
          std::vector<WireField> line;
          EXPECT_TRUE(DecodeMessage(s.bytes, &line));
          for (const WireField& l : line) {
            if (l.field == 1) loc.functions.push_back(l.varint);
          }
        }
      }
      d.locations[id] = loc;
    } else if (f.field == 5) {
      uint64_t id = 0;
      std::string name;
      for (const WireField& s : sub) {
        if (s.field == 1) id = s.varint;
        if (s.field == 2) name = str(s.varint);
      }
      d.functions[id] = name;
    } else if (f.field == 11) {
      EXPECT_TRUE(DecodeMessage(f.bytes, &sub));
      for (const WireField& s : sub) {
        (s.field == 1 ? d.period_type.first : d.period_type.second) = str(s.varint);
      }
    } else if (f.field == 12) {
      d.period = f.varint;
    } else if (f.field == 13) {
      d.comment = str(f.varint);
    } else if (f.field == 14) {
      d.default_sample_type = f.varint;
    }
  }
  return d;
}

// Names of a sample's stack, leaf first, one entry per Line.
std::vector<std::string> StackNames(const Decoded& d, const Decoded::Sample& s) {
  std::vector<std::string> names;
  for (uint64_t loc : s.locations) {
    for (uint64_t fn : d.locations.at(loc).functions) names.push_back(d.functions.at(fn));
  }
  return names;
}

TEST(ProtoEncoderTest, VarintsAndPacked) {
  ProtoEncoder e;
  e.Varint(1, 300);  // 0x08 0xac 0x02
  e.PackedVarints(2, {1, 300});
  EXPECT_EQ(e.data(), std::string("\x08\xac\x02\x12\x03\x01\xac\x02", 8));
  e.Clear();
  e.Int64(3, -1);  // ten bytes of two's complement
  EXPECT_EQ(e.data().size(), 11u);
}

TEST(PprofWriterTest, RecordedProfileHasTwoValuesMappingsLabelsAndInlineLines) {
  Profile p;
  p.event = "cpu-clock";
  p.weight_unit = "nanoseconds";
  p.sample_frequency_hz = 1000;
  p.duration_ns = 2000000000;
  p.frames = {
      {"main", ProfileFrameKind::kUser, "/usr/bin/app", "abcd", 0x1100, "", 0},
      {"compute", ProfileFrameKind::kUser, "/usr/bin/app", "abcd", 0x1200, "app.cc", 42},
      {"helper", ProfileFrameKind::kInlined, "/usr/bin/app", "abcd", 0x1200, "helper.h", 7},
      {"do_syscall_64", ProfileFrameKind::kKernel, "[kernel.kallsyms]", "", 0, "", 0},
  };
  p.stacks.push_back({"app", 10, 11, {0, 1, 2}, 3, 3000000});
  p.stacks.push_back({"app", 10, 12, {0, 3}, 1, 1000000});
  const std::string bytes = EncodePprof(p);
  const Decoded d = Decode(bytes);

  ASSERT_EQ(d.sample_types.size(), 2u);
  EXPECT_EQ(d.sample_types[0], std::make_pair(std::string("samples"), std::string("count")));
  EXPECT_EQ(d.sample_types[1], std::make_pair(std::string("cpu"), std::string("nanoseconds")));
  EXPECT_EQ(d.strings.at(d.default_sample_type), "cpu");
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(d.samples[0].values, (std::vector<uint64_t>{3, 3000000}));
  EXPECT_EQ(d.samples[1].values, (std::vector<uint64_t>{1, 1000000}));
  // Leaf first; the inlined helper shares compute's location, innermost line first.
  EXPECT_EQ(StackNames(d, d.samples[0]),
            (std::vector<std::string>{"helper", "compute", "main"}));
  EXPECT_EQ(d.samples[0].locations.size(), 2u);
  EXPECT_EQ(StackNames(d, d.samples[1]), (std::vector<std::string>{"do_syscall_64", "main"}));
  EXPECT_EQ(d.samples[0].labels.at("thread"), "app");
  EXPECT_EQ(d.samples[0].labels.at("pid"), "10");
  EXPECT_EQ(d.samples[1].labels.at("tid"), "12");
  // Mappings carry file and build id; addresses are file offsets.
  const Decoded::Location& compute_loc = d.locations.at(d.samples[0].locations[0]);
  const Decoded::Mapping& m = d.mappings.at(compute_loc.mapping);
  EXPECT_EQ(m.file, "/usr/bin/app");
  EXPECT_EQ(m.build_id, "abcd");
  EXPECT_EQ(compute_loc.address, 0x1200u);
  EXPECT_GT(m.limit, 0x1200u);
  EXPECT_EQ(d.mappings.size(), 2u);
}

// pprof names its first mapping as the profile's binary: the program, not the first library a
// stack happened to reach (libc's start_thread in a threaded program), nor the loader's _start.
TEST(PprofWriterTest, TheProgramIsTheFirstMapping) {
  Profile p;
  p.event = "cpu-clock";
  p.frames = {
      {"start_thread", ProfileFrameKind::kUser, "/usr/lib/libc.so.6", "", 0x100, "", 0},
      {"_start", ProfileFrameKind::kUser, "/usr/lib/ld-linux-x86-64.so.2", "", 0x10, "", 0},
      {"work", ProfileFrameKind::kUser, "/usr/bin/app", "", 0x2000, "", 0},
      {"_start", ProfileFrameKind::kUser, "/usr/bin/app", "", 0x1000, "", 0},
  };
  p.stacks.push_back({"app", 10, 11, {0, 2}, 3, 3});
  p.stacks.push_back({"app", 10, 10, {1}, 1, 1});
  p.stacks.push_back({"app", 10, 10, {3, 2}, 1, 1});
  const Decoded d = Decode(EncodePprof(p));
  ASSERT_EQ(d.mapping_order.size(), 3u);
  EXPECT_EQ(d.mappings.at(d.mapping_order[0]).file, "/usr/bin/app");
  // Without a sampled _start: the first module that is no shared object.
  p.stacks.pop_back();
  p.frames.pop_back();
  const Decoded without = Decode(EncodePprof(p));
  ASSERT_EQ(without.mapping_order.size(), 3u);
  EXPECT_EQ(without.mappings.at(without.mapping_order[0]).file, "/usr/bin/app");
}

TEST(PprofWriterTest, FoldedProfileHasOnlySampleCounts) {
  NP_ASSERT_OK_AND_ASSIGN(Profile p, ParseFolded("t;a;b 5\nt;a 2\nu;[unknown] 1\n"));
  const Decoded d = Decode(EncodePprof(p));
  ASSERT_EQ(d.sample_types.size(), 1u);
  EXPECT_EQ(d.sample_types[0].first, "samples");
  uint64_t total = 0;
  for (const auto& s : d.samples) total += s.values.at(0);
  EXPECT_EQ(total, 8u);
  EXPECT_TRUE(d.mappings.empty());
  EXPECT_EQ(d.strings.at(0), "");
}

TEST(PprofWriterTest, GzipRoundTripsAndIsDeterministic) {
  NP_ASSERT_OK_AND_ASSIGN(Profile p, ParseFolded("t;a;b 5\nt;a 2\n"));
  const std::string gz = RenderPprof(p);
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<uint8_t>(gz[0]), 0x1f);
  EXPECT_EQ(static_cast<uint8_t>(gz[1]), 0x8b);
  EXPECT_EQ(testing::Gunzip(gz), EncodePprof(p));
  EXPECT_EQ(RenderPprof(p), gz);
}

// A time profile (record --off-cpu): one file, cpu / off_cpu / wall nanoseconds per sample.
TEST(PprofWriterTest, TimeProfileHasCpuOffCpuAndWallSampleTypes) {
  Profile p;
  p.event = "wall";
  p.count_unit = "us";
  p.frames = {{"main", ProfileFrameKind::kUser, "", "", 0, "", 0},
              {"[waiting for CPU]", ProfileFrameKind::kUser, "", "", 0, "", 0}};
  ProfileStack on{"app", 1, 1, {0}, 3, 3000};
  ProfileStack off{"app", 1, 1, {0, 1}, 7, 7000};
  off.off_cpu = true;
  p.stacks = {on, off};
  const Decoded d = Decode(EncodePprof(p));
  ASSERT_EQ(d.sample_types.size(), 3u);
  EXPECT_EQ(d.sample_types[0], std::make_pair(std::string("cpu"), std::string("nanoseconds")));
  EXPECT_EQ(d.sample_types[1], std::make_pair(std::string("off_cpu"), std::string("nanoseconds")));
  EXPECT_EQ(d.sample_types[2], std::make_pair(std::string("wall"), std::string("nanoseconds")));
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(d.samples[0].values, (std::vector<uint64_t>{3000, 0, 3000}));
  EXPECT_EQ(d.samples[1].values, (std::vector<uint64_t>{0, 7000, 7000}));
  EXPECT_EQ(d.strings[d.default_sample_type], "wall");
}

// An off-CPU view alone (`convert` of OUT.offcpu.folded): pprof opens on off_cpu, the only time
// it holds.
TEST(PprofWriterTest, OffCpuViewAloneOpensOnOffCpu) {
  Profile p;
  p.event = "off-cpu";
  p.count_unit = "us";
  p.frames = {{"main", ProfileFrameKind::kUser, "", "", 0, "", 0},
              {"futex_wait", ProfileFrameKind::kKernel, "", "", 0, "", 0}};
  ProfileStack off{"app", 1, 1, {0, 1}, 7, 7000};
  off.off_cpu = true;
  p.stacks = {off};
  const Decoded d = Decode(EncodePprof(p));
  ASSERT_EQ(d.samples.size(), 1u);
  EXPECT_EQ(d.samples[0].values, (std::vector<uint64_t>{0, 7000, 7000}));
  EXPECT_EQ(d.strings[d.default_sample_type], "off_cpu");
  // Measured switch to switch: no sampling period, and not called an event named "off-cpu".
  EXPECT_EQ(d.period, 0u);
  EXPECT_THAT(d.comment, ::testing::HasSubstr("off-CPU time"));
}

// A wall profile (record --wall): its CPU half has the sampling period a CPU profile states, and
// the comment says what the two halves are rather than naming a perf event "wall".
TEST(PprofWriterTest, WallProfileStatesItsCpuPeriodAndWhatItMeasures) {
  Profile p;
  p.event = "wall";
  p.count_unit = "us";
  p.sample_frequency_hz = 999;
  p.frames = {{"main", ProfileFrameKind::kUser, "", "", 0, "", 0}};
  ProfileStack on{"app", 1, 1, {0}, 1, 1001001};
  ProfileStack off{"app", 1, 1, {0}, 7, 7000};
  off.off_cpu = true;
  p.stacks = {on, off};
  const Decoded d = Decode(EncodePprof(p));
  EXPECT_EQ(d.period_type, (std::pair<std::string, std::string>{"cpu", "nanoseconds"}));
  EXPECT_EQ(d.period, 1001001u);
  EXPECT_EQ(d.strings[d.default_sample_type], "wall");
  EXPECT_THAT(d.comment, ::testing::StartsWith("nativeprof, wall time: each thread's on-CPU time (exact"));
}

}  // namespace
}  // namespace nativeprof::output
