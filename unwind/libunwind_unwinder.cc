#include "unwind/libunwind_unwinder.h"

#include <libunwind.h>
#include <linux/perf_event.h>

#include <cstring>
#include <vector>

#include "unwind/cfi_rule.h"
#include "unwind/kernel_callchain.h"

extern "C" int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
                                                  unw_dyn_info_t* di, unw_proc_info_t* pi,
                                                  int need_unwind_info, void* arg);

namespace nativeprof::unwind {

struct LibunwindUnwinder::State {
  ModuleFiles* files = nullptr;
  ProcessView process;
  DwarfRegs regs;
  StackCopy stack;
  bool read_beyond_stack = false;
  bool no_module = false;
  // Modules met during this unwind: their load bias, so eh_frame reads at any vaddr of the
  // module (also in segments the address space does not list) find the file bytes.
  struct Loaded {
    int64_t bias;
    ElfCfi* elf;
  };
  std::vector<Loaded> loaded;
};

namespace {

using State = LibunwindUnwinder::State;

constexpr uint8_t kPeDatarelSdata4 = 0x3b;

bool ReadModuleWord(const State& st, uint64_t addr, uint64_t* out) {
  for (const State::Loaded& l : st.loaded) {
    uint64_t off;
    if (!l.elf->image().SvmaToFileOffset(addr - l.bias, &off)) continue;
    std::span<const uint8_t> b = l.elf->image().Bytes(off, 8);
    if (b.size() != 8) continue;
    std::memcpy(out, b.data(), 8);
    return true;
  }
  return false;
}

int FindProcInfo(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t* pi, int need_unwind_info,
                 void* arg) {
  State* st = static_cast<State*>(arg);
  if (st->process.address_space == nullptr) return -UNW_ENOINFO;
  const sampler::Mapping* m = st->process.address_space->Find(ip);
  if (m == nullptr) {
    st->no_module = true;
    return -UNW_ENOINFO;
  }
  ElfCfi* elf = st->files->Get(*m, st->process);
  if (elf == nullptr) return -UNW_ENOINFO;
  const module::ElfImage& image = elf->image();
  // The bias from ip's own file offset, not the mapping's start: a segment whose p_offset is
  // not page-aligned with its p_vaddr apart (lld's layout, every Rust binary since 1.90) is
  // mapped from the page below p_offset, which lies in the previous segment's file range.
  uint64_t ip_svma;
  if (!image.FileOffsetToSvma(m->FileOffset(ip), &ip_svma)) return -UNW_ENOINFO;
  const int64_t bias = static_cast<int64_t>(ip - ip_svma);
  bool known = false;
  for (const State::Loaded& l : st->loaded) known |= l.elf == elf;
  if (!known) st->loaded.push_back({bias, elf});

  if (!image.eh_frame_hdr().has_value()) return -UNW_ENOINFO;
  const uint64_t hdr_svma = image.eh_frame_hdr()->svma;
  std::span<const uint8_t> hdr =
      image.Bytes(image.eh_frame_hdr()->offset, image.eh_frame_hdr()->size);
  // version, eh_frame_ptr_enc, fde_count_enc, table_enc, eh_frame_ptr (4), fde_count (4), table
  if (hdr.size() < 12 || hdr[0] != 1 || hdr[3] != kPeDatarelSdata4 || (hdr[1] & 0x0f) != 0x0b ||
      hdr[2] != 0x03) {
    return -UNW_ENOINFO;
  }
  uint32_t fde_count;
  std::memcpy(&fde_count, hdr.data() + 8, 4);
  unw_dyn_info_t di;
  std::memset(&di, 0, sizeof(di));
  di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
  di.start_ip = m->start_avma;
  di.end_ip = m->end_avma;
  di.u.rti.segbase = hdr_svma + bias;
  di.u.rti.table_data = hdr_svma + bias + 12;
  di.u.rti.table_len = uint64_t{fde_count} * 8 / sizeof(unw_word_t);
  return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

void PutUnwindInfo(unw_addr_space_t, unw_proc_info_t*, void*) {}

int GetDynInfoListAddr(unw_addr_space_t, unw_word_t*, void*) { return -UNW_ENOINFO; }

// glibc's __restore_rt (and the vdso's sigreturn): `mov $15,%rax; syscall` (rt_sigreturn),
// recognized from the code bytes as libunwind itself does for local unwinding.
bool IsSigreturnTrampoline(const State& st, uint64_t ip) {
  static constexpr uint8_t kSigreturn[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  if (st.process.address_space == nullptr) return false;
  const sampler::Mapping* m = st.process.address_space->Find(ip);
  if (m == nullptr) return false;
  ElfCfi* elf = st.files->Get(*m, st.process);
  if (elf == nullptr) return false;
  std::span<const uint8_t> code = elf->image().Bytes(m->FileOffset(ip), sizeof(kSigreturn));
  return code.size() == sizeof(kSigreturn) &&
         std::memcmp(code.data(), kSigreturn, sizeof(kSigreturn)) == 0;
}

int AccessMem(unw_addr_space_t, unw_word_t addr, unw_word_t* valp, int write, void* arg) {
  if (write) return -UNW_EINVAL;
  State* st = static_cast<State*>(arg);
  uint64_t v;
  const StepError e = st->stack.Read(addr, &v);
  if (e == StepError::kNone) {
    *valp = v;
    return 0;
  }
  if (ReadModuleWord(*st, addr, &v)) {
    *valp = v;
    return 0;
  }
  // A stack-looking address past the copy means the copy was too short.
  if (e == StepError::kBeyondStack && addr < st->stack.end() + (uint64_t{1} << 30)) {
    st->read_beyond_stack = true;
  }
  return -UNW_EINVAL;
}

int AccessReg(unw_addr_space_t, unw_regnum_t reg, unw_word_t* valp, int write, void* arg) {
  if (write) return -UNW_EINVAL;
  State* st = static_cast<State*>(arg);
  if (reg < 0 || reg >= kDwarfRegCount || !st->regs.Has(reg)) return -UNW_EBADREG;
  *valp = st->regs.value[reg];
  return 0;
}

int AccessFpreg(unw_addr_space_t, unw_regnum_t, unw_fpreg_t*, int, void*) { return -UNW_EBADREG; }
int Resume(unw_addr_space_t, unw_cursor_t*, void*) { return -UNW_EINVAL; }
int GetProcName(unw_addr_space_t, unw_word_t, char*, size_t, unw_word_t*, void*) {
  return -UNW_ENOINFO;
}

unw_accessors_t kAccessors = {FindProcInfo, PutUnwindInfo, GetDynInfoListAddr, AccessMem,
                              AccessReg,    AccessFpreg,   Resume,             GetProcName};

}  // namespace

LibunwindUnwinder::LibunwindUnwinder(LibunwindUnwinderOptions options)
    : options_(options), files_(options.debug_dirs), state_(std::make_unique<State>()) {
  unw_addr_space_t as = unw_create_addr_space(&kAccessors, 0);
  // Per-thread caching would tie cached unwind info to one process's mapping; no caching keeps
  // each sample independent (this backend is the slow cross-check).
  if (as != nullptr) unw_set_caching_policy(as, UNW_CACHE_NONE);
  address_space_ = as;
  state_->files = &files_;
}

LibunwindUnwinder::~LibunwindUnwinder() {
  if (address_space_ != nullptr) unw_destroy_addr_space(static_cast<unw_addr_space_t>(address_space_));
}

void LibunwindUnwinder::Unwind(const sampler::SampleView& sample, const ProcessView& process,
                               UnwoundStack* out) {
  out->Clear();
  const KernelCallchain chain = SplitCallchain(sample.callchain);
  AppendCallchainFrames(chain.kernel, /*kernel=*/true, out);
  const size_t first_user = out->frames.size();
  State& st = *state_;
  if (sample.regs_abi != PERF_SAMPLE_REGS_ABI_64 || sample.regs_user.empty() ||
      address_space_ == nullptr) {
    if (first_user == 0) out->end = StackEnd::kNoUnwindInfo;
    return;
  }
  st.process = process;
  st.loaded.clear();
  st.read_beyond_stack = false;
  st.no_module = false;
  if (!RegsFromSample(sample.regs_user, options_.regs_mask, &st.regs) || !st.regs.Has(kDwarfRa)) {
    out->end = StackEnd::kNoUnwindInfo;
    return;
  }
  if (st.regs.Has(kDwarfRbp)) out->sampled_rbp = st.regs.value[kDwarfRbp];
  st.stack = StackCopy{st.regs.sp(), sample.stack_user};
  unw_cursor_t cursor;
  if (unw_init_remote(&cursor, static_cast<unw_addr_space_t>(address_space_), &st) != 0) {
    out->end = StackEnd::kNoUnwindInfo;
    return;
  }
  bool exact = true;
  while (true) {
    unw_word_t ip = 0;
    unw_get_reg(&cursor, UNW_REG_IP, &ip);
    if (ip == 0) {
      out->end = StackEnd::kComplete;
      break;
    }
    if (out->frames.size() >= kMaxFrames) {
      out->end = StackEnd::kMaxDepth;
      break;
    }
    out->frames.push_back(
        {ip, exact ? FrameAddressKind::kInstructionPointer : FrameAddressKind::kReturnAddress,
         false});
    if (process.address_space == nullptr || process.address_space->Find(exact ? ip : ip - 1) == nullptr) {
      out->end = StackEnd::kNoModule;
      break;
    }
    // The signal trampoline itself is named from its exact pc, as in DwarfUnwinder.
    if (!exact && IsSigreturnTrampoline(st, ip)) {
      out->frames.back().kind = FrameAddressKind::kInstructionPointer;
    }
    exact = unw_is_signal_frame(&cursor) > 0;
    const int r = unw_step(&cursor);
    if (r == 0) {
      out->end = StackEnd::kComplete;
      break;
    }
    // The second step: from the leaf's caller to the frame above it (as in DwarfUnwinder).
    if (out->frames.size() == first_user + 2 && r > 0) {
      unw_word_t cfa = 0;
      if (unw_get_reg(&cursor, UNW_REG_SP, &cfa) == 0) out->caller_cfa = cfa;
    }
    if (r < 0) {
      out->end = st.read_beyond_stack ? StackEnd::kTruncatedStack
                 : st.no_module       ? StackEnd::kNoModule
                 : r == -UNW_ENOINFO  ? StackEnd::kNoUnwindInfo
                                      : StackEnd::kBadFrame;
      break;
    }
  }
  if (options_.splice_kernel_chain) {
    SpliceKernelChain(chain.user, first_user, process, out, chain.CutAtMaxStack());
  }
}

}  // namespace nativeprof::unwind
