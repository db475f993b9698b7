// Recorded DWARF samples on disk, so unwinders can be tested and benchmarked offline: registers,
// copied stack bytes and callchain of each sample, the process's mappings, and copies of the ELF
// files they map (gzip-compressed; large libraries are kept with only their ELF headers and
// unwind tables, every other byte zeroed). Written by the dwarf_capture test program; read by unit
// tests and bench/unwind_benchmark.cc. One thread at a time.
//
// Layout of a fixture directory:
//   fixture.txt  "regs_mask HEX" / "module ID FILE|- ORIGINAL_PATH" / "map START END OFFSET PROT ID"
//   samples.gz   per sample: u32 pid, tid, nregs, nchain, stack_size, pad; u64 abi, requested;
//                then nregs + nchain u64 values and stack_size bytes (padded to 8)
//   <FILE>.gz    the module files named in fixture.txt
#ifndef NATIVEPROF_UNWIND_SAMPLE_FIXTURE_H_
#define NATIVEPROF_UNWIND_SAMPLE_FIXTURE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sampler/address_space.h"
#include "sampler/module_registry.h"
#include "sampler/records.h"
#include "unwind/unwinder.h"

namespace nativeprof::unwind {

struct FixtureSample {
  uint32_t pid = 0, tid = 0;
  uint64_t regs_abi = 0;
  uint64_t stack_requested = 0;
  std::vector<uint64_t> regs;
  std::vector<uint64_t> callchain;
  std::vector<uint8_t> stack;

  static FixtureSample FromView(const sampler::SampleView& s);
  sampler::SampleView View() const;
};

struct FixtureModule {
  std::string original_path;
  std::string file;  // name in the fixture directory without ".gz"; empty: not stored
};

struct FixtureMap {
  uint64_t start = 0, end = 0, offset = 0;
  uint32_t prot = 0;
  uint32_t module = 0;  // index into modules
};

struct SampleFixture {
  uint64_t regs_mask = 0;
  std::vector<FixtureModule> modules;
  std::vector<FixtureMap> maps;
  std::vector<FixtureSample> samples;
};

// Writes `fixture` to `dir` (created if missing); `module_files[i]` is the path of module i's
// file to store (compressed), or "" to leave it out. `zero_all_but_unwind[i]` keeps only the
// headers and unwind sections of that file. Errors: I/O errors with the failing path.
absl::Status WriteSampleFixture(const std::string& dir, const SampleFixture& fixture,
                                const std::vector<std::string>& module_files,
                                const std::vector<bool>& zero_all_but_unwind);

// A fixture loaded for unwinding: its module files decompressed into a temporary directory
// (removed by the destructor), registered in `modules`, mapped in `address_space`.
class LoadedFixture {
 public:
  ~LoadedFixture();
  // Errors: kNotFound (no fixture.txt), kDataLoss (malformed files).
  static absl::StatusOr<std::unique_ptr<LoadedFixture>> Load(const std::string& dir);

  const SampleFixture& data() const { return data_; }
  ProcessView process() const { return {0, &address_space_, &modules_}; }
  const sampler::AddressSpace& address_space() const { return address_space_; }
  const sampler::ModuleRegistry& modules() const { return modules_; }

 private:
  LoadedFixture() = default;
  SampleFixture data_;
  std::string temp_dir_;
  sampler::AddressSpace address_space_;
  sampler::ModuleRegistry modules_;
};

// Zeroes every byte of an ELF image except the ELF header, program and section headers, the
// section-name table, notes and the unwind sections (.eh_frame, .eh_frame_hdr, .debug_frame), so
// a large library compresses to little more than its unwind tables. An image that is not ELF64, or
// whose section headers or section-name table lie outside it, is left as it is.
void ZeroAllButUnwindTables(std::string* image);

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_SAMPLE_FIXTURE_H_
