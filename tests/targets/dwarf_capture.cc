// Captures a DWARF-unwinding fixture (unwind/sample_fixture.h): runs CMD under a cpu-clock
// sampling session with user registers, an 8 KiB stack copy and the kernel callchain, and writes
// up to MAX samples of the main process with its mappings and chosen module files.
// Usage: dwarf_capture OUT_DIR MAX [--store SUBSTR]... [--store-unwind SUBSTR]... -- CMD ARGS...
//   --store: keep files whose path contains SUBSTR whole; --store-unwind: keep only their
//   unwind tables (for big libraries such as libc). The vdso is always stored.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "module/vdso.h"
#include "sampler/child_process.h"
#include "sampler/session.h"
#include "unwind/dwarf_stack_size.h"
#include "unwind/sample_fixture.h"
#include "unwind/x86_64_regs.h"

namespace {

using nativeprof::unwind::FixtureMap;
using nativeprof::unwind::FixtureModule;
using nativeprof::unwind::FixtureSample;

struct Capture : nativeprof::sampler::RecordSink {
  int32_t pid = 0;
  nativeprof::unwind::SampleFixture fixture;
  std::vector<std::string> paths;  // original path per module
  absl::flat_hash_map<std::string, uint32_t> module_index;
  std::string vdso_file;

  void OnSample(const nativeprof::sampler::SampleView& s) override {
    if (static_cast<int32_t>(s.pid) == pid) fixture.samples.push_back(FixtureSample::FromView(s));
  }
  void OnMmap(const nativeprof::sampler::MmapView& m) override {
    if (static_cast<int32_t>(m.pid) != pid || !m.executable) return;
    std::string path(m.filename);
    auto [it, inserted] = module_index.emplace(path, fixture.modules.size());
    if (inserted) {
      std::string base = path.substr(path.rfind('/') + 1);
      if (base == "[vdso]") base = "vdso.so";
      fixture.modules.push_back(FixtureModule{path, base});
      paths.push_back(path);
      if (path == "[vdso]") {
        auto image = nativeprof::module::ReadVdsoImage(pid, m.start_avma, m.start_avma + m.length);
        if (image.ok()) {
          vdso_file = absl::StrCat("/tmp/np-vdso-", getpid(), ".so");
          (void)nativeprof::WriteFileAtomically(vdso_file, *image);
        }
      }
    }
    fixture.maps.push_back(FixtureMap{m.start_avma, m.start_avma + m.length, m.file_offset, m.prot,
                                      it->second});
  }
  void OnComm(const nativeprof::sampler::CommView&) override {}
  void OnTask(const nativeprof::sampler::TaskView&) override {}
  void OnLost(const nativeprof::sampler::LostView&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: dwarf_capture OUT_DIR MAX [--store S]... [--store-unwind S]... -- CMD\n");
    return 2;
  }
  const std::string out_dir = argv[1];
  const size_t max_samples = std::strtoul(argv[2], nullptr, 10);
  std::vector<std::string> store, store_unwind, cmd;
  int i = 3;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    if (std::strcmp(argv[i], "--store") == 0 && i + 1 < argc) store.push_back(argv[++i]);
    else if (std::strcmp(argv[i], "--store-unwind") == 0 && i + 1 < argc) store_unwind.push_back(argv[++i]);
  }
  for (++i; i < argc; ++i) cmd.push_back(argv[i]);

  auto child = nativeprof::sampler::ChildProcess::Spawn(cmd);
  if (!child.ok()) { std::fprintf(stderr, "%s\n", child.status().ToString().c_str()); return 1; }
  nativeprof::sampler::SessionOptions options;
  options.sampling.event = nativeprof::sampler::CpuClockEvent();
  options.sampling.include_kernel = false;
  options.sampling.regs_user_mask = nativeprof::unwind::DwarfSampleRegsMask();
  options.sampling.stack_user_bytes = nativeprof::unwind::kDefaultDwarfStackSize;
  options.targets = {child->pid()};
  auto session = nativeprof::sampler::Session::Open(options);
  if (!session.ok()) { std::fprintf(stderr, "%s\n", session.status().ToString().c_str()); return 1; }
  Capture capture;
  capture.pid = child->pid();
  capture.fixture.regs_mask = options.sampling.regs_user_mask;
  if (auto s = child->Release(); !s.ok()) { std::fprintf(stderr, "%s\n", s.ToString().c_str()); return 1; }
  while (!child->TryWait().has_value()) {
    pollfd pfd{child->pidfd(), POLLIN, 0};
    (*session)->Poll(std::span<pollfd>(&pfd, child->pidfd() >= 0 ? 1 : 0), 100);
    (*session)->Drain(capture);
  }
  (*session)->Drain(capture);

  // Keep an evenly spaced subset.
  auto& samples = capture.fixture.samples;
  if (max_samples > 0 && samples.size() > max_samples) {
    std::vector<FixtureSample> kept;
    for (size_t k = 0; k < max_samples; ++k) kept.push_back(std::move(samples[k * samples.size() / max_samples]));
    samples = std::move(kept);
  }
  std::vector<std::string> files(capture.paths.size());
  std::vector<bool> zero(capture.paths.size(), false);
  for (size_t m = 0; m < capture.paths.size(); ++m) {
    const std::string& p = capture.paths[m];
    if (p == "[vdso]") files[m] = capture.vdso_file;
    for (const auto& s : store) if (absl::StrContains(p, s)) files[m] = p;
    for (const auto& s : store_unwind) {
      if (absl::StrContains(p, s)) { files[m] = p; zero[m] = true; }
    }
  }
  auto st = nativeprof::unwind::WriteSampleFixture(out_dir, capture.fixture, files, zero);
  if (!capture.vdso_file.empty()) unlink(capture.vdso_file.c_str());
  if (!st.ok()) { std::fprintf(stderr, "%s\n", st.ToString().c_str()); return 1; }
  std::fprintf(stderr, "wrote %zu samples, %zu modules to %s\n", samples.size(),
               capture.fixture.modules.size(), out_dir.c_str());
  return 0;
}
