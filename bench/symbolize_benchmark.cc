// Symbolizer speed: warm per-address lookups (goal >= 10 million/s per core), the full
// SymbolizeUser path with cached names, DWARF inline lookups, and first-time loading of large
// modules (libstdc++ from .dynsym, libc with its libc6-dbg debug file and DWARF) and kallsyms.
#include <dlfcn.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "base/cache_dir.h"
#include "benchmark/benchmark.h"
#include "module/elf_image.h"
#include "sampler/module_registry.h"
#include "symbolize/kernel_symbols.h"
#include "symbolize/module_symbols.h"
#include "symbolize/symbolizer.h"

namespace nativeprof::symbolize {
namespace {

std::string LibraryPath(const char* symbol) {
  Dl_info info;
  void* fn = dlsym(RTLD_DEFAULT, symbol);
  if (fn == nullptr || dladdr(fn, &info) == 0) return "";
  return info.dli_fname;
}

std::string LibcPath() { return LibraryPath("qsort"); }
std::string LibstdcxxPath() { return "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"; }

// A cache directory private to this benchmark process (removed by nobody: it is under /tmp).
const CacheDir& BenchCache() {
  static const CacheDir* cache = [] {
    char dir[] = "/tmp/np-bench-cache-XXXXXX";
    return new CacheDir(::mkdtemp(dir) != nullptr ? dir : "/tmp/np-bench-cache");
  }();
  return *cache;
}

std::unique_ptr<ModuleSymbols> LoadModule(const std::string& path, bool dwarf,
                                          bool cache = false) {
  auto file = module::ElfImage::Open(path);
  if (!file.ok()) return nullptr;
  ModuleLoadOptions options;
  options.dwarf = dwarf;
  if (cache) options.cache = BenchCache();
  return ModuleSymbols::Load(std::move(*file), path, options);
}

// File offsets inside random function symbols of `symbols`.
std::vector<uint64_t> RandomOffsets(const ModuleSymbols& symbols, size_t n) {
  std::vector<uint64_t> out;
  std::mt19937_64 rng(42);
  const auto& table = symbols.table().symbols();
  while (out.size() < n && !table.empty()) {
    const SymbolTable::Symbol& s = table[rng() % table.size()];
    uint64_t svma = s.start + (s.size > 1 ? rng() % s.size : 0);
    for (const module::LoadSegment& seg : symbols.file().loads()) {
      if (svma >= seg.vaddr && svma < seg.vaddr + seg.filesz) {
        out.push_back(svma - seg.vaddr + seg.offset);
      }
    }
  }
  return out;
}

void BM_SymbolTableLookupWarm(benchmark::State& state) {
  auto symbols = LoadModule(LibcPath(), false);
  if (symbols == nullptr) return state.SkipWithError("cannot load libc");
  std::vector<uint64_t> svmas;
  for (uint64_t off : RandomOffsets(*symbols, 4096)) {
    uint64_t svma;
    if (symbols->FileOffsetToSvma(off, &svma)) svmas.push_back(svma);
  }
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(symbols->Lookup(svmas[i++ & 4095]));
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["symbols"] = static_cast<double>(symbols->table().size());
}
BENCHMARK(BM_SymbolTableLookupWarm);

// The whole SymbolizeUser path for addresses whose module is loaded and names are cached.
void BM_SymbolizeUserWarm(benchmark::State& state) {
  const bool dwarf = state.range(0) != 0;
  std::string libc = LibcPath();
  auto probe = LoadModule(libc, false);
  if (probe == nullptr) return state.SkipWithError("cannot load libc");
  std::vector<uint64_t> offsets = RandomOffsets(*probe, 4096);
  sampler::ModuleRegistry registry;
  sampler::ModuleInfo info;
  info.path = libc;
  sampler::ModuleId id = registry.Intern(info);
  SymbolizerOptions options;
  options.inline_frames = dwarf;
  auto symbolizer = MakeSymbolizer(registry, options);
  std::vector<SymbolizedFrame> frames;
  for (uint64_t off : offsets) symbolizer->SymbolizeUser(1, id, off, 0, &frames);  // warm up
  size_t i = 0;
  for (auto _ : state) {
    frames.clear();
    symbolizer->SymbolizeUser(1, id, offsets[i++ & 4095], 0, &frames);
    benchmark::DoNotOptimize(frames.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SymbolizeUserWarm)->Arg(0)->Arg(1)->ArgName("dwarf");

void BM_LoadLibstdcxx(benchmark::State& state) {
  for (auto _ : state) {
    auto symbols = LoadModule(LibstdcxxPath(), true);
    if (symbols == nullptr) return state.SkipWithError("cannot load libstdc++");
    state.counters["symbols"] = static_cast<double>(symbols->table().size());
  }
}
BENCHMARK(BM_LoadLibstdcxx)->Unit(benchmark::kMillisecond);

// Arg 0: libdw inflates libc6-dbg's compressed DWARF on every load (no cache); arg 1: the
// decompressed copy from the cache (warmed before timing), as in every profile after the first;
// arg 2: a cache miss every time (inflate and store the copy), as in the first profile.
void BM_LoadLibcWithDebugFile(benchmark::State& state) {
  const bool cache = state.range(0) != 0;
  if (cache) LoadModule(LibcPath(), true, true);
  for (auto _ : state) {
    if (state.range(0) == 2) {
      state.PauseTiming();
      std::filesystem::remove_all(BenchCache().root() + "/debug");
      state.ResumeTiming();
    }
    auto symbols = LoadModule(LibcPath(), true, cache);
    if (symbols == nullptr) return state.SkipWithError("cannot load libc");
    state.counters["symbols"] = static_cast<double>(symbols->table().size());
    state.counters["debug_file"] = symbols->debug_file().empty() ? 0 : 1;
    state.counters["cus"] =
        symbols->dwarf() ? static_cast<double>(symbols->dwarf()->compilation_units()) : 0;
  }
}
BENCHMARK(BM_LoadLibcWithDebugFile)->Arg(0)->Arg(1)->Arg(2)->ArgName("cache")->Unit(benchmark::kMillisecond);

// First lookup of each of 1000 distinct libc addresses including DWARF inline chains: the cost a
// profile pays per distinct address after the target exits.
void BM_FirstTimeSymbolizeLibc1000(benchmark::State& state) {
  std::string libc = LibcPath();
  auto probe = LoadModule(libc, false);
  if (probe == nullptr) return state.SkipWithError("cannot load libc");
  std::vector<uint64_t> offsets = RandomOffsets(*probe, 1000);
  for (auto _ : state) {
    sampler::ModuleRegistry registry;
    sampler::ModuleInfo info;
    info.path = libc;
    sampler::ModuleId id = registry.Intern(info);
    auto symbolizer = MakeSymbolizer(registry, SymbolizerOptions());
    std::vector<SymbolizedFrame> frames;
    for (uint64_t off : offsets) symbolizer->SymbolizeUser(1, id, off, 0, &frames);
    benchmark::DoNotOptimize(frames.data());
  }
}
BENCHMARK(BM_FirstTimeSymbolizeLibc1000)->Unit(benchmark::kMillisecond);

void BM_LoadKallsyms(benchmark::State& state) {
  for (auto _ : state) {
    auto table = LoadKallsyms();
    if (!table.ok()) return state.SkipWithError(std::string(table.status().message()).c_str());
    state.counters["symbols"] = static_cast<double>(table->size());
  }
}
BENCHMARK(BM_LoadKallsyms)->Unit(benchmark::kMillisecond);

// Naming one core-kernel address in a fresh KernelSymbols whose boot is already in the cache:
// what a profile with kernel frames pays instead of BM_LoadKallsyms after the first of a boot.
void BM_KernelSymbolsFromCache(benchmark::State& state) {
  auto live = LoadKallsyms();
  if (!live.ok()) return state.SkipWithError(std::string(live.status().message()).c_str());
  uint64_t addr = 0;
  for (const SymbolTable::Symbol& s : live->symbols()) {
    if (live->Name(s) == "schedule") addr = s.start + 1;
  }
  if (addr == 0) return state.SkipWithError("no 'schedule' in kallsyms");
  KernelSymbols(BenchCache()).Lookup(addr);  // warm the cache
  for (auto _ : state) {
    KernelSymbols symbols(BenchCache());
    benchmark::DoNotOptimize(symbols.Lookup(addr).data());
    if (symbols.read_live()) return state.SkipWithError("the cache did not answer");
  }
}
BENCHMARK(BM_KernelSymbolsFromCache)->Unit(benchmark::kMillisecond);

// The first profile of a boot: read kallsyms, keep its stable part and store it (a fresh cache
// directory each iteration).
void BM_KernelSymbolsCacheMiss(benchmark::State& state) {
  auto live = LoadKallsyms();
  if (!live.ok()) return state.SkipWithError(std::string(live.status().message()).c_str());
  const uint64_t addr = live->symbols()[live->size() / 2].start;
  // Static: google-benchmark calls this function again for each repetition, and a directory
  // name used before would be a cache hit.
  static int round = 0;
  for (auto _ : state) {
    const std::string dir = BenchCache().root() + "/miss-" + std::to_string(round++);
    {
      KernelSymbols symbols{CacheDir(dir)};
      benchmark::DoNotOptimize(symbols.Lookup(addr).data());
    }
    // Each entry is megabytes: do not leave hundreds of them behind.
    state.PauseTiming();
    std::filesystem::remove_all(dir);
    state.ResumeTiming();
  }
}
BENCHMARK(BM_KernelSymbolsCacheMiss)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace nativeprof::symbolize
