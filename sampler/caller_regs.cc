#include "sampler/caller_regs.h"

#include <asm/perf_regs.h>

namespace nativeprof::sampler {
namespace {

// Register `perf_reg`'s index among the values of a sample with `mask`; -1 if not in it.
int IndexIn(uint64_t mask, int perf_reg) {
  if ((mask >> perf_reg & 1) == 0) return -1;
  return __builtin_popcountll(mask & ((uint64_t{1} << perf_reg) - 1));
}

}  // namespace

CallerRegsLayout::CallerRegsLayout(uint64_t sample_regs_user)
    : ip_index_(IndexIn(sample_regs_user, PERF_REG_X86_IP)),
      sp_index_(IndexIn(sample_regs_user, PERF_REG_X86_SP)),
      bp_index_(IndexIn(sample_regs_user, PERF_REG_X86_BP)),
      count_(static_cast<size_t>(__builtin_popcountll(sample_regs_user))) {}

void CallerRegsLayout::Fill(uint64_t ip, uint64_t sp, uint64_t bp,
                            std::vector<uint64_t>* regs) const {
  regs->assign(count_, 0);
  Update(ip, sp, bp, regs);
}

void CallerRegsLayout::Update(uint64_t ip, uint64_t sp, uint64_t bp,
                              std::vector<uint64_t>* regs) const {
  if (regs->size() != count_) regs->assign(count_, 0);
  if (ip_index_ >= 0) (*regs)[ip_index_] = ip;
  if (sp_index_ >= 0) (*regs)[sp_index_] = sp;
  if (bp_index_ >= 0) (*regs)[bp_index_] = bp;
}

}  // namespace nativeprof::sampler
