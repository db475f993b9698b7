#include "symbolize/dwarf_info.h"

#include <sys/stat.h>

#include <dwarf.h>
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <cstdlib>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "symbolize/display_name.h"
#include "symbolize/dwarf_unit_table.h"

namespace nativeprof::symbolize {
namespace {

// Walks at most this many DIEs of one unit when indexing it (times ten), or of a program's units
// whose producer records no flags (Rust's, clang's by default) when telling a debug build.
constexpr int kMaxDiesScanned = 200000;
// Deeper than any real program's nesting of DIEs (namespaces, classes, functions, lexical
// blocks, inlined calls); a crafted file nests without end.
constexpr int kMaxDieDepth = 64;

const char* StringAttr(Dwarf_Die* die, int name) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, name, &attr) == nullptr) return nullptr;
  return dwarf_formstring(&attr);
}

// The declaration a concrete (inlined or out-of-line) instance refers to, for its parents.
bool OriginOf(Dwarf_Die* die, Dwarf_Die* origin) {
  Dwarf_Attribute attr;
  *origin = *die;
  for (int hops = 0; hops < 4; ++hops) {
    if (dwarf_attr(origin, DW_AT_abstract_origin, &attr) == nullptr &&
        dwarf_attr(origin, DW_AT_specification, &attr) == nullptr) {
      return true;
    }
    Dwarf_Die next;
    if (dwarf_formref_die(&attr, &next) == nullptr) return false;
    *origin = next;
  }
  return true;
}

// The scopes that qualify a function name (namespaces, classes, structs, unions).
bool IsNameScope(int tag) {
  return tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
         tag == DW_TAG_union_type;
}

// Whether an unnamed class is a lambda's closure type: GCC gives it a structure_type with an
// artificial member function named "<lambda>" (its constructor); clang a class_type.
bool IsLambdaClosure(Dwarf_Die* type) {
  if (dwarf_tag(type) == DW_TAG_class_type) return true;
  Dwarf_Die member;
  if (dwarf_child(type, &member) != 0) return false;
  int budget = 64;
  do {
    if (dwarf_tag(&member) == DW_TAG_subprogram) {
      const char* name = dwarf_diename(&member);
      if (name != nullptr && std::strcmp(name, "<lambda>") == 0) return true;
    }
  } while (--budget > 0 && dwarf_siblingof(&member, &member) == 0);
  return false;
}

// The compiler's flags in a GCC or clang producer string (GCC records its switches by default,
// -grecord-gcc-switches; clang only with -grecord-command-line), or empty when it has none.
// clang's are looked for after its version: a vendor's text before it may hold " -" (Android's
// "(…, +lto, -mlgo, based on r487747d) clang version 17.0.2").
absl::string_view ProducerFlags(absl::string_view producer) {
  size_t from = 0;
  if (!absl::StartsWith(producer, "GNU ")) {
    const size_t version = producer.find("clang version ");
    if (version == absl::string_view::npos || absl::StrContains(producer, "rustc")) return {};
    from = producer.find(' ', version + strlen("clang version "));
    if (from == absl::string_view::npos) return {};
  }
  const size_t flags = producer.find(" -", from);
  return flags == absl::string_view::npos ? absl::string_view() : producer.substr(flags);
}

// For flags from ProducerFlags: the last -O flag is -O0, or there is none (the compilers'
// default is -O0).
bool FlagsLackOptimization(absl::string_view flags) {
  // The last -O flag wins, as on the compiler's command line.
  size_t last = flags.rfind(" -O");
  if (last != absl::string_view::npos) {
    return last + 3 < flags.size() && flags[last + 3] == '0';
  }
  return true;
}

// Where a unit's parameters and local variables live. Unoptimized code keeps every one in its
// frame's stack slot (a single DW_OP_fbreg); optimized code keeps most in registers or moves
// them over the function's life (location lists). Statics (DW_OP_addr) say nothing either way.
struct VariableLocations {
  int in_frame = 0;
  int elsewhere = 0;
  int total() const { return in_frame + elsewhere; }
};

// Enough variables to tell a debug build from an optimized one.
constexpr int kVariablesToDecide = 2000;

// Depth-first walk of a unit's DIEs, counting its variables' locations, within `budget` DIEs
// and kMaxDieDepth levels.
void CountVariableLocations(Dwarf_Die* parent, int depth, int* budget,
                            VariableLocations* counts) {
  Dwarf_Die child;
  if (depth > kMaxDieDepth || dwarf_child(parent, &child) != 0) return;
  do {
    if (--*budget <= 0 || counts->total() >= kVariablesToDecide) return;
    const int tag = dwarf_tag(&child);
    Dwarf_Attribute attr;
    if ((tag == DW_TAG_formal_parameter || tag == DW_TAG_variable) &&
        dwarf_attr(&child, DW_AT_location, &attr) != nullptr) {
      const int form = dwarf_whatform(&attr);
      Dwarf_Op* ops = nullptr;
      size_t nops = 0;
      if (form != DW_FORM_exprloc && form != DW_FORM_block1 && form != DW_FORM_block2 &&
          form != DW_FORM_block4 && form != DW_FORM_block) {
        ++counts->elsewhere;  // a location list
      } else if (dwarf_getlocation(&attr, &ops, &nops) == 0 && nops > 0 &&
                 ops[0].atom != DW_OP_addr && ops[0].atom != DW_OP_addrx) {
        ++(ops[0].atom == DW_OP_fbreg ? counts->in_frame : counts->elsewhere);
      }
    }
    if (dwarf_haschildren(&child)) CountVariableLocations(&child, depth + 1, budget, counts);
  } while (dwarf_siblingof(&child, &child) == 0);
}

}  // namespace

DwarfInfo::~DwarfInfo() {
  if (dwarf_ != nullptr) dwarf_end(dwarf_);
}

std::unique_ptr<DwarfInfo> DwarfInfo::Open(const module::ElfImage& elf) {
  if (!elf.HasSectionData(".debug_info")) return nullptr;
  Dwarf* dwarf = dwarf_begin_elf(elf.elf(), DWARF_C_READ, nullptr);
  if (dwarf == nullptr) return nullptr;
  std::unique_ptr<DwarfInfo> info(new DwarfInfo());
  info->dwarf_ = dwarf;
  info->elf_ = &elf;

  // The unit headers and address sets from the section bytes (dwarf_unit_table.h): libdw's own
  // walks took 10 ms for libc6-dbg, most of what loading libc's DWARF cost.
  const std::vector<DwarfUnitHeader> headers =
      ReadDwarfUnitHeaders(elf.LoadedSectionData(".debug_info"));
  const size_t units = headers.size();
  info->cu_offsets_.reserve(units);
  absl::flat_hash_map<uint64_t, size_t> unit_at;  // header offset -> unit
  unit_at.reserve(units);
  for (size_t i = 0; i < units; ++i) {
    info->cu_offsets_.push_back(headers[i].die_offset);
    unit_at.emplace(headers[i].offset, i);
  }
  info->cus_.resize(units);
  info->index_.resize(units);

  // Where each unit's code is: .debug_aranges (GCC writes it for every unit with code; one table
  // for the whole file), else the unit DIE's own ranges (clang and rustc write no aranges).
  std::vector<bool> covered(units, false);
  ForEachDwarfArange(elf.LoadedSectionData(".debug_aranges"),
                     [&](uint64_t unit, uint64_t start, uint64_t length) {
                       auto it = unit_at.find(unit);
                       if (it == unit_at.end()) return;
                       covered[it->second] = true;
                       if (length > 0 && start + length > start) {
                         info->ranges_.push_back(CuRange{start, start + length, it->second});
                       }
                     });
  for (size_t i = 0; i < units; ++i) {
    if (covered[i]) continue;
    Dwarf_Die* cudie = info->CuDie(i);
    if (cudie == nullptr) continue;
    Dwarf_Addr base, start, end;
    ptrdiff_t at = 0;
    while ((at = dwarf_ranges(cudie, at, &base, &start, &end)) > 0) {
      if (end > start) info->ranges_.push_back(CuRange{start, end, i});
    }
  }
  std::sort(info->ranges_.begin(), info->ranges_.end(),
            [](const CuRange& a, const CuRange& b) { return a.start < b.start; });
  return info;
}

Dwarf_Die* DwarfInfo::CuDie(size_t cu) {
  if (!cus_[cu].has_value()) {
    Dwarf_Die die;
    if (dwarf_offdie(dwarf_, cu_offsets_[cu], &die) == nullptr) return nullptr;
    cus_[cu] = die;
  }
  return &*cus_[cu];
}

Dwarf_Die* DwarfInfo::LinesCuDie(size_t cu) {
  Dwarf_Die* cudie = CuDie(cu);
  if (cudie == nullptr) return nullptr;
  CuIndex::Lines& lines = index_[cu].lines;
  if (lines == CuIndex::Lines::kUnchecked) {
    lines = LineProgramUsable(cudie) ? CuIndex::Lines::kUsable : CuIndex::Lines::kUnusable;
  }
  return lines == CuIndex::Lines::kUsable ? cudie : nullptr;
}

namespace {

// A skeleton unit of split DWARF: DWARF 5's tag, or GNU's DWARF 4 unit with a dwo name.
bool IsSkeletonUnit(Dwarf_Die* cudie) {
  const int tag = dwarf_tag(cudie);
  return tag == DW_TAG_skeleton_unit ||
         (tag == DW_TAG_compile_unit &&
          (dwarf_hasattr(cudie, DW_AT_GNU_dwo_name) || dwarf_hasattr(cudie, DW_AT_dwo_name)));
}

// Whether every file libdw would open looking for skeleton unit `skeleton`'s .dwo is a regular
// file or absent (libdw_find_split_unit: the dwo name itself when absolute, else in the directory
// of the file it read, then in the compilation directory). Those names come from the file being
// symbolized: a FIFO or a device among them would block or feed the open libdw makes.
bool SplitUnitFilesAreSafe(Dwarf_Die* skeleton, const std::string& file_directory) {
  const char* dwo = StringAttr(skeleton, DW_AT_dwo_name);
  if (dwo == nullptr) dwo = StringAttr(skeleton, DW_AT_GNU_dwo_name);
  if (dwo == nullptr) return true;  // nothing is opened
  std::vector<std::string> candidates;
  if (dwo[0] == '/') {
    candidates.emplace_back(dwo);
  } else {
    if (!file_directory.empty()) candidates.push_back(absl::StrCat(file_directory, "/", dwo));
    if (const char* comp_dir = StringAttr(skeleton, DW_AT_comp_dir); comp_dir != nullptr) {
      if (comp_dir[0] == '/') {
        candidates.push_back(absl::StrCat(comp_dir, "/", dwo));
      } else if (!file_directory.empty()) {
        candidates.push_back(absl::StrCat(file_directory, "/", comp_dir, "/", dwo));
      }
    }
  }
  for (const std::string& path : candidates) {
    struct stat st {};
    // procfs and tracefs files (/proc/kmsg, trace_pipe) are "regular" and block too; they show
    // a size of 0, and no ELF file is smaller than its header.
    if (::stat(path.c_str(), &st) == 0 &&
        (!S_ISREG(st.st_mode) || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr)))) {
      return false;
    }
  }
  return true;
}

}  // namespace

Dwarf_Die* DwarfInfo::DiesCuDie(size_t cu) {
  Dwarf_Die* cudie = CuDie(cu);
  if (cudie == nullptr) return nullptr;
  CuIndex& index = index_[cu];
  if (!index.split_checked) {
    index.split_checked = true;
    uint8_t unit_type = 0;
    Dwarf_Die split;
    // dwarf_cu_info opens a skeleton's .dwo file, whose names are checked first. An invalid DIE
    // (no tag) when the .dwo file was not found: the skeleton's own DIEs then.
    if (IsSkeletonUnit(cudie) && SplitUnitFilesAreSafe(cudie, elf_->FileDirectory()) &&
        dwarf_cu_info(cudie->cu, nullptr, &unit_type, nullptr, &split, nullptr, nullptr,
                      nullptr) == 0 &&
        unit_type == DW_UT_skeleton && split.cu != nullptr &&
        dwarf_tag(&split) == DW_TAG_compile_unit) {
      index.split_die = split;
    }
  }
  return index.split_die.has_value() ? &*index.split_die : cudie;
}

bool DwarfInfo::LineProgramUsable(Dwarf_Die* cudie) {
  Dwarf_Attribute attr;
  Dwarf_Word offset = 0;
  if (dwarf_attr(cudie, DW_AT_stmt_list, &attr) == nullptr ||
      dwarf_formudata(&attr, &offset) != 0) {
    return false;  // no line table
  }
  uint8_t address_size = 0;
  Dwarf_Die unit;
  if (dwarf_diecu(cudie, &unit, &address_size, nullptr) == nullptr) return false;
  if (!line_sections_.has_value()) {
    line_sections_ = LineSections{elf_->LoadedSectionData(".debug_line"),
                                  elf_->LoadedSectionData(".debug_str"),
                                  elf_->LoadedSectionData(".debug_line_str")};
  }
  if (absl::Status st = CheckLineProgram(*line_sections_, offset, address_size); !st.ok()) {
    Logger("symbolize")->debug("{}: line table at .debug_line+{:#x} not read: {}", elf_->name(),
                               offset, st.message());
    return false;
  }
  return true;
}

const DwarfInfo::CuRange* DwarfInfo::FindCu(uint64_t svma) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), svma,
                             [](uint64_t a, const CuRange& r) { return a < r.start; });
  // Ranges of different units do not normally overlap; look back a little in case they do.
  for (int steps = 0; it != ranges_.begin() && steps < 8; ++steps) {
    --it;
    if (svma < it->end) return &*it;
  }
  return nullptr;
}

void DwarfInfo::IndexChildren(Dwarf_Die* parent, int32_t parent_function, uint32_t depth,
                              CuIndex* index, Dwarf_Files* files, size_t nfiles, int* budget) {
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return;
  do {
    if (--*budget <= 0) return;
    int tag = dwarf_tag(&child);
    switch (tag) {
      case DW_TAG_subprogram:
      case DW_TAG_inlined_subroutine: {
        Dwarf_Addr base, start, end;
        ptrdiff_t offset = 0;
        uint32_t function = static_cast<uint32_t>(index->functions.size());
        bool has_code = false;
        while ((offset = dwarf_ranges(&child, offset, &base, &start, &end)) > 0) {
          if (end <= start) continue;
          index->ranges.push_back(FunctionRange{start, end, function, depth});
          has_code = true;
        }
        if (!has_code) break;  // a declaration or an abstract instance: no code of its own
        FunctionDie f;
        f.die = child;
        f.parent = parent_function;
        f.inlined = tag == DW_TAG_inlined_subroutine;
        Dwarf_Attribute attr;
        Dwarf_Word value;
        if (f.inlined) {
          if (dwarf_attr(&child, DW_AT_call_file, &attr) != nullptr &&
              dwarf_formudata(&attr, &value) == 0 && files != nullptr && value < nfiles) {
            const char* src = dwarf_filesrc(files, value, nullptr, nullptr);
            if (src != nullptr) f.call_file = src;
          }
          if (dwarf_attr(&child, DW_AT_call_line, &attr) != nullptr &&
              dwarf_formudata(&attr, &value) == 0) {
            f.call_line = static_cast<uint32_t>(value);
          }
        }
        index->functions.push_back(std::move(f));
        if (dwarf_haschildren(&child)) {
          IndexChildren(&child, static_cast<int32_t>(function), depth + 1, index, files, nfiles,
                        budget);
        }
        break;
      }
      case DW_TAG_lexical_block:
      case DW_TAG_namespace:
      case DW_TAG_class_type:
      case DW_TAG_structure_type:
      case DW_TAG_union_type:
      case DW_TAG_module:
        if (dwarf_haschildren(&child)) {
          IndexChildren(&child, parent_function, depth + 1, index, files, nfiles, budget);
        }
        break;
      default:
        break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

void DwarfInfo::BuildIndex(size_t cu) {
  CuIndex& index = index_[cu];
  index.built = true;
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  Dwarf_Die* cudie = CuDie(cu);
  if (cudie == nullptr) return;
  if (LinesCuDie(cu) == nullptr || dwarf_getsrcfiles(cudie, &files, &nfiles) != 0) files = nullptr;
  int budget = kMaxDiesScanned * 10;
  IndexChildren(DiesCuDie(cu), -1, 0, &index, files, nfiles, &budget);
  std::sort(index.ranges.begin(), index.ranges.end(),
            [](const FunctionRange& a, const FunctionRange& b) {
              return a.start != b.start ? a.start < b.start : a.depth < b.depth;
            });
  index.max_end.resize(index.ranges.size());
  uint64_t max_end = 0;
  for (size_t i = 0; i < index.ranges.size(); ++i) {
    max_end = std::max(max_end, index.ranges[i].end);
    index.max_end[i] = max_end;
  }
}

void DwarfInfo::IndexScopes(Dwarf_Die* parent, const std::string& prefix, int depth,
                            Dwarf_Die* function) {
  Dwarf_Die child;
  if (depth > kMaxDieDepth || dwarf_child(parent, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    if (IsNameScope(tag)) {
      const char* name = dwarf_diename(&child);
      std::string scope;
      if (name != nullptr) {
        scope = absl::StrCat(prefix, name, "::");
      } else if (tag == DW_TAG_namespace) {
        scope = absl::StrCat(prefix, "(anonymous namespace)::");
      } else {
        // An unnamed class: a lambda's closure, or an unnamed struct or union. Inside a
        // function it is named after it, as c++filt names a lambda `main::{lambda(int)#1}`.
        // The function's own name is qualified (its out-of-line DIE may sit outside the
        // namespace that declares it).
        std::string in = function != nullptr ? FunctionName(function, /*full_names=*/false) : "";
        scope = absl::StrCat(in.empty() ? prefix : absl::StrCat(in, "::"),
                             IsLambdaClosure(&child) ? "{lambda}::" : "{unnamed type}::");
      }
      IndexScopes(&child, scope, depth + 1, nullptr);
    } else {
      // Other DIEs do not qualify names (a named class declared inside a function is
      // qualified by the scopes around that function, not by the function), but may hold
      // functions.
      if (tag == DW_TAG_subprogram && !prefix.empty()) {
        scope_of_.emplace(child.addr, prefix);
      }
      if (dwarf_haschildren(&child)) {
        IndexScopes(&child, prefix, depth + 1, tag == DW_TAG_subprogram ? &child : function);
      }
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

std::string DwarfInfo::FunctionName(Dwarf_Die* die, bool full_names) {
  const char* linkage = StringAttr(die, DW_AT_linkage_name);
  if (linkage == nullptr) linkage = StringAttr(die, DW_AT_MIPS_linkage_name);
  if (linkage != nullptr) return DisplayName(linkage, full_names);
  const char* name = StringAttr(die, DW_AT_name);
  if (name == nullptr) return std::string();
  // No linkage name (static or C functions): qualify with the enclosing namespaces and classes
  // of the declaration. One walk of the declaration's unit indexes them all; libdw's
  // dwarf_getscopes_die walks the unit from its start on every call, which for the large C
  // units of an interpreter was most of the time spent naming frames.
  Dwarf_Die origin;
  if (!OriginOf(die, &origin)) return name;
  Dwarf_Die unit;
  if (dwarf_diecu(&origin, &unit, nullptr, nullptr) == nullptr) return name;
  if (scoped_units_.insert(unit.addr).second) {
    IndexScopes(&unit, std::string(), 0, nullptr);
  }
  auto it = scope_of_.find(origin.addr);
  return it == scope_of_.end() ? std::string(name) : absl::StrCat(it->second, name);
}

const std::string& DwarfInfo::NameOf(FunctionDie& function, bool full_names) {
  int i = full_names ? 1 : 0;
  if (!function.named[i]) {
    function.names[i] = FunctionName(&function.die, full_names);
    function.named[i] = true;
  }
  return function.names[i];
}

bool DwarfInfo::Describe(uint64_t svma, bool inline_frames, bool full_names,
                         std::vector<DwarfFrame>* out) {
  const CuRange* range = FindCu(svma);
  if (range == nullptr) return false;
  CuIndex& index = index_[range->cu];
  if (!index.built) BuildIndex(range->cu);

  // Innermost function instance containing svma: ranges nest, so it is the containing range with
  // the greatest (start, depth); scan back until no earlier range can reach svma.
  auto it = std::upper_bound(index.ranges.begin(), index.ranges.end(), svma,
                             [](uint64_t a, const FunctionRange& r) { return a < r.start; });
  int32_t innermost = -1;
  for (size_t i = static_cast<size_t>(it - index.ranges.begin()); i-- > 0;) {
    if (index.max_end[i] <= svma) break;
    if (svma < index.ranges[i].end) {
      innermost = static_cast<int32_t>(index.ranges[i].function);
      break;
    }
  }
  if (innermost < 0) return false;

  // Position in the innermost function: the line table row for svma.
  std::string file;
  uint32_t line = 0;
  Dwarf_Die* cudie = CuDie(range->cu);
  if (cudie == nullptr) return false;
  if (Dwarf_Line* row = LinesCuDie(range->cu) != nullptr ? dwarf_getsrc_die(cudie, svma) : nullptr;
      row != nullptr) {
    const char* src = dwarf_linesrc(row, nullptr, nullptr);
    if (src != nullptr) file = src;
    int lineno = 0;
    if (dwarf_lineno(row, &lineno) == 0 && lineno > 0) line = static_cast<uint32_t>(lineno);
  }
  size_t first = out->size();
  for (int32_t f = innermost, hops = 0; f >= 0 && hops < 256; ++hops) {
    FunctionDie& function = index.functions[static_cast<size_t>(f)];
    if (!function.inlined || inline_frames) {
      out->push_back(DwarfFrame{NameOf(function, full_names), file, line});
    }
    if (!function.inlined) break;  // the out-of-line function: the chain ends here
    // Moving outwards: the caller is at this inlined call's call site.
    file = function.call_file;
    line = function.call_line;
    f = function.parent;
  }
  return out->size() > first;
}

size_t DwarfInfo::indexed_units() const {
  return static_cast<size_t>(
      std::count_if(index_.begin(), index_.end(), [](const CuIndex& i) { return i.built; }));
}

bool DwarfInfo::BuiltWithoutOptimization(std::string* evidence) {
  // A producer that records its flags (GCC's default, clang's with -grecord-command-line) says.
  // Rust's never does, nor clang's by default, and a Rust debug build inlines too
  // (#[inline(always)], and what rustc inlines itself), so for those units the sign is where the
  // variables of the program's own code live (std's units and the crates.io registry's are
  // built apart): nearly all in the frame. rdbg, a HashMap loop, `cargo build`: 1,338 of 1,387
  // frame slots; `--release` with debug info: 20 of 1,208. Without variable information
  // (Rust's debug = 1 or "limited", -gline-tables-only) it says nothing.
  VariableLocations silent;
  int budget = kMaxDiesScanned;
  bool rust_only = true;  // every unit counted is Rust's (for the evidence's wording)
  // A split unit holds the producer, the language and the variables, its skeleton the ranges:
  // each split unit read opens its .dwo file, so a program of thousands is judged by its first.
  constexpr int kMaxSplitUnitsRead = 64;
  int split_units_read = 0;
  for (size_t i = 0; i < cu_offsets_.size(); ++i) {
    Dwarf_Die* skeleton = CuDie(i);
    if (skeleton == nullptr) continue;
    if (IsSkeletonUnit(skeleton) && ++split_units_read > kMaxSplitUnitsRead) break;
    Dwarf_Die* die = DiesCuDie(i);
    if (die == nullptr) continue;
    Dwarf_Die& cu = *die;
    const char* producer = StringAttr(&cu, DW_AT_producer);
    if (producer == nullptr) continue;
    Dwarf_Word lang = 0;
    Dwarf_Attribute attr;
    if (dwarf_attr(&cu, DW_AT_language, &attr) != nullptr) dwarf_formudata(&attr, &lang);
    if (lang != DW_LANG_Rust) {
      Dwarf_Addr low;
      const bool has_code =
          dwarf_lowpc(skeleton, &low) == 0 || dwarf_hasattr(skeleton, DW_AT_ranges);
      if (!has_code) continue;
      if (const absl::string_view flags = ProducerFlags(producer); !flags.empty()) {
        if (FlagsLackOptimization(flags)) {
          *evidence = producer;
          return true;
        }
        continue;
      }
    }
    if (budget <= 0 || silent.total() >= kVariablesToDecide) continue;
    if (lang == DW_LANG_Rust) {
      const char* name = StringAttr(&cu, DW_AT_name);
      if (name == nullptr || absl::StrContains(name, "/rustc/") ||
          absl::StrContains(name, "/.cargo/registry/")) {
        continue;
      }
    } else {
      rust_only = false;
    }
    CountVariableLocations(&cu, 0, &budget, &silent);
  }
  // A few functions prove nothing; 80 %: an optimized build keeps a variable in its frame only
  // when its address is taken.
  if (silent.total() < 50 || silent.in_frame * 5 < silent.total() * 4) return false;
  *evidence = absl::StrCat(rust_only ? "Rust code" : "its code", " keeps ", silent.in_frame, " of ",
                           silent.total(), " variables in the stack frame (a debug build)");
  return true;
}

}  // namespace nativeprof::symbolize
