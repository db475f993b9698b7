#include "unwind/x86_64_regs.h"

#include <asm/perf_regs.h>

#include <cstring>

namespace nativeprof::unwind {
namespace {

// DWARF number for each perf register index, or -1 for registers CFI does not use.
constexpr int8_t kPerfToDwarf[PERF_REG_X86_64_MAX] = {
    /*AX*/ kDwarfRax, /*BX*/ kDwarfRbx, /*CX*/ kDwarfRcx, /*DX*/ kDwarfRdx,
    /*SI*/ kDwarfRsi, /*DI*/ kDwarfRdi, /*BP*/ kDwarfRbp, /*SP*/ kDwarfRsp,
    /*IP*/ kDwarfRa,  /*FLAGS*/ -1,    /*CS*/ -1,        /*SS*/ -1,
    /*DS*/ -1,        /*ES*/ -1,       /*FS*/ -1,        /*GS*/ -1,
    /*R8*/ kDwarfR8,  /*R9*/ kDwarfR9, /*R10*/ kDwarfR10, /*R11*/ kDwarfR11,
    /*R12*/ kDwarfR12, /*R13*/ kDwarfR13, /*R14*/ kDwarfR14, /*R15*/ kDwarfR15,
};

// The mask every DWARF session samples with (the registers CFI uses), and the DWARF number of
// each of its values, in the order they come.
struct SampleOrder {
  int8_t dwarf[kDwarfRegCount] = {};
  uint64_t mask = 0;
};
constexpr SampleOrder kSampleOrder = [] {
  SampleOrder o;
  int next = 0;
  for (int i = 0; i < PERF_REG_X86_64_MAX; ++i) {
    if (kPerfToDwarf[i] < 0) continue;
    o.dwarf[next++] = kPerfToDwarf[i];
    o.mask |= uint64_t{1} << i;
  }
  return o;
}();
static_assert(__builtin_popcountll(kSampleOrder.mask) == kDwarfRegCount);

}  // namespace

uint64_t DwarfSampleRegsMask() { return kSampleOrder.mask; }

// RegsFromSample's fast path sets each field itself rather than clearing the whole set first.
static_assert(sizeof(DwarfRegs) == 192, "a new DwarfRegs field: set it in RegsFromSample");

bool RegsFromSample(std::span<const uint64_t> values, uint64_t mask, DwarfRegs* out) {
  if (mask == kSampleOrder.mask && values.size() >= kDwarfRegCount) {
    // Every sample's path (each allocation's under --alloc=1): 17 stores to places known at
    // compile time; no bit scan, no branch, no popcount (a libgcc call where the baseline x86-64
    // has no POPCNT), and value[] is not cleared first, since every entry is written.
#pragma GCC unroll 17
    for (int i = 0; i < kDwarfRegCount; ++i) out->value[kSampleOrder.dwarf[i]] = values[i];
    out->valid = (1u << kDwarfRegCount) - 1;
    out->beyond_copy = 0;
    out->sampled = out->valid;
    out->depends = 0;
    std::memset(out->loaded_from, 0, sizeof(out->loaded_from));
    return true;
  }
  *out = DwarfRegs();
  if (mask == kSampleOrder.mask) return false;  // fewer values than the mask has bits
  if (static_cast<size_t>(__builtin_popcountll(mask)) > values.size()) return false;
  // Visit only the set bits, low bit first.
  size_t next = 0;
  for (uint64_t rest = mask; rest != 0; rest &= rest - 1) {
    const int bit = __builtin_ctzll(rest);
    const uint64_t v = values[next++];
    if (bit < PERF_REG_X86_64_MAX && kPerfToDwarf[bit] >= 0) out->Set(kPerfToDwarf[bit], v);
  }
  out->sampled = out->valid;
  return true;
}

}  // namespace nativeprof::unwind
