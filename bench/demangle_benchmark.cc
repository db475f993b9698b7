// Demangling throughput (names/s) for realistic C++, Rust legacy and Rust v0 symbols, in the
// profile form (DemangleSymbol) and the c++filt form (DemangleForDisplay). Symbolization
// demangles once per distinct symbol, so this bounds the cost per unique frame.
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "symbolize/demangle.h"

namespace {

const std::vector<std::string>& CxxNames() {
  static const auto* names = new std::vector<std::string>{
      "_ZNSt6vectorIiSaIiEE9push_backEOi",
      "_ZNK2ns3FooIiE3barEiPKc",
      "_ZZ4mainENKUliE_clEi",
      "_ZN12_GLOBAL__N_13fooEv",
      "_ZNSt8_Rb_treeINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt4pairIKS5_iESt10_"
      "Select1stIS8_ESt4lessIS5_ESaIS8_EE8_M_eraseEPSt13_Rb_tree_nodeIS8_E",
      "_ZNSt10_HashtableIimSaISt4pairIKimEENSt8__detail10_Select1stESt8equal_toIiESt4hashIiENS4_"
      "18_Mod_range_hashingENS4_20_Default_ranged_hashENS4_20_Prime_rehash_policyENS4_17_"
      "Hashtable_traitsILb0ELb0ELb1EEEE9_M_rehashEmRKm",
      "_Z3foov.part.0.isra.0",
      "_ZNSt15basic_streambufIcSt11char_traitsIcEE6xsputnEPKcl",
  };
  return *names;
}

const std::vector<std::string>& RustLegacyNames() {
  static const auto* names = new std::vector<std::string>{
      "_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$"
      "u7d$$u7d$$GT$17h27f14859c664490dE",
      "_ZN39_$LT$collections..vec..Vec$LT$T$GT$$GT$4push17hd4b6b23c1b88141aE",
      "_ZN4core3str9from_utf817hdcea28871313776dE",
      "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h6d7fb7c6fa1a43e1E",
      "_ZN5alloc7raw_vec19RawVec$LT$T$C$A$GT$7reserve21do_reserve_and_handle17h0e4e8a9dffa1a5e2E",
      "_ZN9backtrace3foo17hbb467fcdaea5d79bE.llvm.A5310EB9",
  };
  return *names;
}

const std::vector<std::string>& RustV0Names() {
  static const auto* names = new std::vector<std::string>{
      "_RNvMs0_NtCs5l0EXMQXRMU_21rustc_data_structures17obligation_forestINtB5_16ObligationForest"
      "NtNtNtCsdozMG8X9FIu_21rustc_trait_selection6traits7fulfill26PendingPredicateObligationE22"
      "register_obligation_atB1v_",
      "_RNCINkXs25_NgCsbmNqQUJIY6D_4core5sliceINyB9_4IterhENuNgNoBb_4iter8iterator8Iterator9"
      "rpositionNCNgNpB9_6memchr7memrchrs_0E0Bb_",
      "_RNvMNtNtNtNtCs8a2262Dv4r_3mio3sys4unix8selector5epollNtB2_8Selector6select",
      "_RINbNbCskIICzLVDPPb_5alloc5alloc8box_freeDINbNiB4_5boxed5FnBoxuEp6OutputuEL_ECs1iopQbuBiw2_"
      "3std",
      "_RNCNCNgCs6DXkGYLi8lr_2cc5spawn00B5_",
      "_RNvCshGpAVYOtgW1_5hello4rust",
  };
  return *names;
}

void Run(benchmark::State& state, const std::vector<std::string>& names, bool display) {
  nativeprof::symbolize::DemangleOptions options;
  size_t bytes = 0;
  for (auto _ : state) {
    for (const std::string& name : names) {
      std::string out = display ? nativeprof::symbolize::DemangleForDisplay(name, options)
                                : nativeprof::symbolize::DemangleSymbol(name, options);
      bytes += out.size();
      benchmark::DoNotOptimize(out);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * names.size()));
  benchmark::DoNotOptimize(bytes);
}

void BM_DemangleSymbol_Cxx(benchmark::State& s) { Run(s, CxxNames(), false); }
void BM_DemangleSymbol_RustLegacy(benchmark::State& s) { Run(s, RustLegacyNames(), false); }
void BM_DemangleSymbol_RustV0(benchmark::State& s) { Run(s, RustV0Names(), false); }
void BM_DemangleForDisplay_Cxx(benchmark::State& s) { Run(s, CxxNames(), true); }
void BM_DemangleForDisplay_RustLegacy(benchmark::State& s) { Run(s, RustLegacyNames(), true); }
void BM_DemangleForDisplay_RustV0(benchmark::State& s) { Run(s, RustV0Names(), true); }
BENCHMARK(BM_DemangleSymbol_Cxx);
BENCHMARK(BM_DemangleSymbol_RustLegacy);
BENCHMARK(BM_DemangleSymbol_RustV0);
BENCHMARK(BM_DemangleForDisplay_Cxx);
BENCHMARK(BM_DemangleForDisplay_RustLegacy);
BENCHMARK(BM_DemangleForDisplay_RustV0);

}  // namespace
