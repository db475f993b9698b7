// Differential fuzzing of UnwindMemo: a memoizing DwarfUnwinder and one that always walks must
// give the same stack for every sample. Each input picks a recorded sample of the nofp_workload
// fixture (tests/testdata/unwind/), lets the memo store its unwind, then changes stack words and
// registers of it as the input says (mostly where the unwind reads: below the outermost frame,
// often to values taken from elsewhere in the same copy, which look like return addresses and
// saved frame pointers) and unwinds the changed sample with both: a replay that the change should
// have prevented shows up as a difference. A fresh memo per input keeps runs reproducible.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "unwind/dwarf_unwinder.h"
#include "unwind/sample_fixture.h"

namespace {

using nativeprof::unwind::DwarfUnwinder;
using nativeprof::unwind::FixtureSample;
using nativeprof::unwind::LoadedFixture;
using nativeprof::unwind::UnwoundStack;

const LoadedFixture& Fixture() {
  static const LoadedFixture* fixture = [] {
    auto f = LoadedFixture::Load(std::string(NP_SOURCE_DIR) + "/tests/testdata/unwind/nofp_workload");
    if (!f.ok()) {
      std::fprintf(stderr, "unwind_memo_fuzzer: %s\n", std::string(f.status().message()).c_str());
      std::abort();
    }
    return f->release();
  }();
  return *fixture;
}

struct Input {
  const uint8_t* p;
  size_t left;
  template <typename T>
  T Take() {
    T v{};
    const size_t n = left < sizeof(T) ? left : sizeof(T);
    std::memcpy(&v, p, n);
    p += n;
    left -= n;
    return v;
  }
};

bool Same(const UnwoundStack& a, const UnwoundStack& b) {
  if (a.frames.size() != b.frames.size() || a.end != b.end || a.stack_high != b.stack_high ||
      a.spliced != b.spliced) {
    return false;
  }
  for (size_t i = 0; i < a.frames.size(); ++i) {
    if (a.frames[i].avma != b.frames[i].avma || a.frames[i].kind != b.frames[i].kind ||
        a.frames[i].kernel != b.frames[i].kernel) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const LoadedFixture& fixture = Fixture();
  const auto& samples = fixture.data().samples;
  if (samples.empty() || size < 2) return 0;
  Input in{data, size};
  const FixtureSample& original = samples[in.Take<uint16_t>() % samples.size()];
  const uint64_t mask = fixture.data().regs_mask;
  DwarfUnwinder memo({.regs_mask = mask});
  DwarfUnwinder walker({.regs_mask = mask, .memoize = false});
  UnwoundStack want, got;
  memo.Unwind(original.View(), fixture.process(), &got);
  walker.Unwind(original.View(), fixture.process(), &want);
  if (!Same(want, got)) std::abort();

  FixtureSample changed = original;
  const size_t words = changed.stack.size() / 8;
  const uint64_t sp = changed.regs.size() > 7 ? changed.regs[7] : 0;
  // Where the walk read: up to the outermost frame (stack_high), else the whole copy.
  size_t read_words = words;
  if (want.stack_high > sp && (want.stack_high - sp) / 8 + 2 < words) {
    read_words = (want.stack_high - sp) / 8 + 2;
  }
  while (in.left >= 4) {
    const uint8_t op = in.Take<uint8_t>();
    const uint16_t where = in.Take<uint16_t>();
    uint64_t value;
    switch (in.Take<uint8_t>() % 3) {
      case 0: value = in.Take<uint64_t>(); break;
      case 1: value = uint64_t{in.Take<uint8_t>()} * 8; break;  // a small delta, added below
      default: {
        // Another word of the same copy: a return address or frame pointer somewhere else.
        const size_t from = words != 0 ? in.Take<uint16_t>() % words : 0;
        value = 0;
        if (words != 0) std::memcpy(&value, changed.stack.data() + from * 8, 8);
        break;
      }
    }
    if ((op & 1) == 0 && read_words != 0) {
      uint64_t* word = reinterpret_cast<uint64_t*>(changed.stack.data()) + where % read_words;
      uint64_t old;
      std::memcpy(&old, word, 8);
      const uint64_t now = (op & 2) != 0 ? old + value : value;
      std::memcpy(word, &now, 8);
    } else if (!changed.regs.empty()) {
      uint64_t& reg = changed.regs[where % changed.regs.size()];
      reg = (op & 2) != 0 ? reg + value : value;
    }
    // Unwind each step of the change: every intermediate sample must agree too.
    if ((op & 4) != 0) {
      memo.Unwind(changed.View(), fixture.process(), &got);
      walker.Unwind(changed.View(), fixture.process(), &want);
      if (!Same(want, got)) std::abort();
    }
  }
  memo.Unwind(changed.View(), fixture.process(), &got);
  walker.Unwind(changed.View(), fixture.process(), &want);
  if (!Same(want, got)) std::abort();
  // And the original again, replayed or walked as the memo now holds.
  memo.Unwind(original.View(), fixture.process(), &got);
  walker.Unwind(original.View(), fixture.process(), &want);
  if (!Same(want, got)) std::abort();
  return 0;
}
