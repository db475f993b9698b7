// DWARF of one module through libdw: which functions were inlined at an address (the chain of
// inlined callers), source file:line, and whether the code was compiled without optimization
// (DW_AT_producer). Opened on the ELF that carries .debug_info (the module or its debug file);
// compressed debug sections are decompressed by libdw. Not thread-safe.
#ifndef NATIVEPROF_SYMBOLIZE_DWARF_INFO_H_
#define NATIVEPROF_SYMBOLIZE_DWARF_INFO_H_

#include <elfutils/libdw.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "module/elf_image.h"
#include "symbolize/line_program_check.h"

namespace nativeprof::symbolize {

struct DwarfFrame {
  std::string function;  // display name (demangled per full_names); may be empty
  std::string file;      // source file, empty when unknown
  uint32_t line = 0;
};

class DwarfInfo {
 public:
  ~DwarfInfo();
  DwarfInfo(const DwarfInfo&) = delete;
  DwarfInfo& operator=(const DwarfInfo&) = delete;

  // Opens the DWARF of `elf`, which must outlive the DwarfInfo. Returns nullptr when the ELF has no
  // .debug_info or libdw rejects it.
  static std::unique_ptr<DwarfInfo> Open(const module::ElfImage& elf);

  // Describes svma: appends the inlined functions containing it, innermost first, then the
  // function they were inlined into (last). With `inline_frames` false only that last frame is
  // produced. Each frame's file:line is where execution is in that function (for the innermost
  // the line of svma, for the others the call site of the next inner one). Returns false (and
  // appends nothing) when no compilation unit covers svma.
  bool Describe(uint64_t svma, bool inline_frames, bool full_names, std::vector<DwarfFrame>* out);

  // True when some compilation unit with code was built without optimization: a GCC/Clang
  // producer that records its flags with -O0 or no -O flag; or, in the units whose producer
  // records none (Rust's, clang's by default), variables nearly all in the stack frame.
  // `evidence` receives the producer string or a description.
  bool BuiltWithoutOptimization(std::string* evidence);

  size_t compilation_units() const { return cu_offsets_.size(); }
  // How many units Describe has indexed so far (each on its first address).
  size_t indexed_units() const;

 private:
  struct CuRange {
    uint64_t start;
    uint64_t end;  // exclusive
    size_t cu;     // index into cu_offsets_
  };
  // A concrete function instance (out-of-line subprogram or inlined call) with code.
  struct FunctionDie {
    Dwarf_Die die;
    int32_t parent = -1;  // enclosing FunctionDie in the same unit, -1 for none
    bool inlined = false;
    uint32_t call_line = 0;
    std::string call_file;
    bool named[2] = {false, false};  // names[i] computed (0: short, 1: full_names)
    std::string names[2];
  };
  struct FunctionRange {
    uint64_t start;
    uint64_t end;
    uint32_t function;  // index into CuIndex::functions
    uint32_t depth;
  };
  // Built on the first address in a unit: one walk of its DIEs, so later lookups are a binary
  // search instead of libdw's per-call tree walk.
  struct CuIndex {
    bool built = false;
    // Whether the unit's line program passed CheckLineProgram (see LinesCuDie).
    enum class Lines : uint8_t { kUnchecked, kUsable, kUnusable } lines = Lines::kUnchecked;
    std::vector<FunctionDie> functions;
    std::vector<FunctionRange> ranges;  // sorted by (start, depth)
    std::vector<uint64_t> max_end;      // prefix maximum of ranges[i].end
    // A skeleton unit's split unit (-gsplit-dwarf: its DIEs in a .dwo file), once looked for.
    bool split_checked = false;
    std::optional<Dwarf_Die> split_die;
  };
  DwarfInfo() = default;
  const CuRange* FindCu(uint64_t svma) const;
  // The unit DIE of unit `cu`, read on first use (most units of a large library never are).
  Dwarf_Die* CuDie(size_t cu);
  // The unit DIE of unit `cu` for libdw's line-table calls (dwarf_getsrcfiles, dwarf_getsrc_die):
  // nullptr unless its line program is well formed (symbolize/line_program_check.h), since
  // elfutils 0.188 reads past the end of malformed ones.
  Dwarf_Die* LinesCuDie(size_t cu);
  // The unit DIE whose children are unit `cu`'s functions: for a skeleton unit (-gsplit-dwarf,
  // DWARF 5 or GNU's DWARF 4 form) its split unit in the .dwo file that libdw finds beside the
  // compilation directory it names, else CuDie(cu). The skeleton keeps the line table, whose
  // file list the split unit's call_file numbers also index.
  Dwarf_Die* DiesCuDie(size_t cu);
  bool LineProgramUsable(Dwarf_Die* cudie);
  void BuildIndex(size_t cu);
  void IndexChildren(Dwarf_Die* parent, int32_t parent_function, uint32_t depth, CuIndex* index,
                     Dwarf_Files* files, size_t nfiles, int* budget);
  const std::string& NameOf(FunctionDie& function, bool full_names);
  // A function's display name: its linkage name demangled, else its name qualified by the
  // scopes around its declaration.
  std::string FunctionName(Dwarf_Die* die, bool full_names);
  // Records in scope_of_ the qualifying prefix of every function declared under `parent`.
  // `function`: the DIE of the function that holds `parent`, if any (it names the unnamed
  // classes declared in it: lambdas).
  void IndexScopes(Dwarf_Die* parent, const std::string& prefix, int depth, Dwarf_Die* function);

  Dwarf* dwarf_ = nullptr;
  const module::ElfImage* elf_ = nullptr;
  std::optional<LineSections> line_sections_;  // read on the first line program checked
  std::vector<Dwarf_Off> cu_offsets_;  // each unit's DIE offset in .debug_info
  std::vector<std::optional<Dwarf_Die>> cus_;  // parallel: each unit's DIE, once read
  std::vector<CuRange> ranges_;        // sorted by start
  std::vector<CuIndex> index_;         // parallel to cu_offsets_
  // Units (by DIE offset) whose scopes IndexScopes walked, and what it found: by function DIE
  // offset, "ns::Class::" for a function declared in scopes; absent for one at unit level.
  // Keyed by where a DIE's bytes are (Dwarf_Die::addr), not by its offset: the units of split
  // DWARF's .dwo files all start at the same offset of their own files.
  absl::flat_hash_set<const void*> scoped_units_;
  absl::flat_hash_map<const void*, std::string> scope_of_;
};

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_DWARF_INFO_H_
