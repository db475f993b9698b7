// Table tests: every row of tests/testdata/demangle/{cpp,rust_legacy,rust_v0}.tsv through the
// public demangling API, in both forms, each mismatch reported with its row and source; plus a
// cross-check of the C++ rows against the installed c++filt.
#include <unistd.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "symbolize/demangle.h"
#include "tests/testing/test_support.h"

namespace nativeprof::symbolize {
namespace {

struct Row {
  int line = 0;
  std::string mangled, full, alternate, source;
};

std::vector<Row> ReadRows(const std::string& name) {
  std::vector<Row> rows;
  std::ifstream in(nativeprof::testing::SourcePath("tests/testdata/demangle/" + name));
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    if (f.size() != 4) {
      ADD_FAILURE() << name << ":" << n << ": expected 4 columns, got " << f.size();
      continue;
    }
    rows.push_back(Row{n, f[0], f[1], f[2], f[3]});
  }
  return rows;
}

std::string Where(const std::string& file, const Row& row) {
  return absl::StrCat(file, ":", row.line, " `", row.mangled.substr(0, 120), "` (", row.source,
                      ")");
}

// Legacy rows without the `17h<16 hex>E` hash are also valid C++ nested names; the combined
// demangler treats them as C++ (as c++filt does), which prints every element, i.e. the full form.
bool HasStrictRustHash(const std::string& mangled) {
  static const std::regex kHash("17h[0-9a-f]{16}E");
  return std::regex_search(mangled, kHash);
}

class RustTsvTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RustTsvTest, DemangleRustMatchesRustcDemangleInBothForms) {
  std::vector<Row> rows = ReadRows(GetParam());
  ASSERT_GT(rows.size(), 50u);
  int full_ok = 0, alt_ok = 0;
  for (const Row& row : rows) {
    std::string full = DemangleRust(row.mangled, false).value_or(row.mangled);
    std::string alt = DemangleRust(row.mangled, true).value_or(row.mangled);
    EXPECT_EQ(full, row.full) << "full form, " << Where(GetParam(), row);
    EXPECT_EQ(alt, row.alternate) << "alternate form, " << Where(GetParam(), row);
    full_ok += full == row.full;
    alt_ok += alt == row.alternate;
  }
  std::printf("%s: DemangleRust full %d/%zu, alternate %d/%zu\n", GetParam(), full_ok, rows.size(),
              alt_ok, rows.size());
}

TEST_P(RustTsvTest, CombinedDemanglersAgree) {
  std::vector<Row> rows = ReadRows(GetParam());
  int exact = 0;
  for (const Row& row : rows) {
    bool may_be_cxx = row.mangled.rfind("_ZN", 0) == 0 && !HasStrictRustHash(row.mangled) &&
                      row.mangled.find('$') == std::string::npos;
    DemangleOptions full_options{.full_names = true};
    std::string display_full = DemangleForDisplay(row.mangled, full_options);
    std::string display_alt = DemangleForDisplay(row.mangled, {});
    std::string symbol_full = DemangleSymbol(row.mangled, full_options);
    std::string symbol_alt = DemangleSymbol(row.mangled, {});
    for (const std::string* got : {&display_full, &symbol_full}) {
      EXPECT_EQ(*got, row.full) << "full form, " << Where(GetParam(), row);
    }
    for (const std::string* got : {&display_alt, &symbol_alt}) {
      // Read as C++, every element is printed: that is the full form.
      if (may_be_cxx && *got == row.full) continue;
      EXPECT_EQ(*got, row.alternate) << "alternate form, " << Where(GetParam(), row);
    }
    exact += display_full == row.full && display_alt == row.alternate;
  }
  std::printf("%s: DemangleForDisplay equal to rustc-demangle in both forms: %d/%zu\n", GetParam(),
              exact, rows.size());
}

INSTANTIATE_TEST_SUITE_P(Vectors, RustTsvTest, ::testing::Values("rust_v0.tsv", "rust_legacy.tsv"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param).find("v0") != std::string::npos
                                      ? "V0"
                                      : "Legacy";
                         });

TEST(CppTsvTest, DemangleForDisplayMatchesCxxfiltColumn) {
  std::vector<Row> rows = ReadRows("cpp.tsv");
  ASSERT_GT(rows.size(), 300u);
  int ok = 0;
  for (const Row& row : rows) {
    for (bool full : {false, true}) {
      // full_names only affects Rust: C++ always comes out as c++filt prints it.
      std::string got = DemangleForDisplay(row.mangled, DemangleOptions{.full_names = full});
      EXPECT_EQ(got, row.full) << "full_names=" << full << ", " << Where("cpp.tsv", row);
      ok += !full && got == row.full;
    }
  }
  std::printf("cpp.tsv: %d/%zu rows equal to c++filt's output\n", ok, rows.size());
}

TEST(CppTsvTest, DemangleSymbolFullNamesIsTheCxxfiltForm) {
  for (const Row& row : ReadRows("cpp.tsv")) {
    std::string got = DemangleSymbol(row.mangled, DemangleOptions{.full_names = true});
    EXPECT_EQ(got, row.full) << Where("cpp.tsv", row);
  }
}

TEST(CppTsvTest, DemangleSymbolDropsArgumentListsOfEveryFunction) {
  for (const Row& row : ReadRows("cpp.tsv")) {
    std::string got = DemangleSymbol(row.mangled, {});
    // Whatever the name, the profile form is never longer than c++filt's.
    EXPECT_LE(got.size(), row.full.size()) << Where("cpp.tsv", row);
    if (row.full == row.mangled) {
      EXPECT_EQ(got, row.mangled) << Where("cpp.tsv", row);
    }
  }
}

TEST(CppTsvTest, CrossCheckWithInstalledCxxfilt) {
  const std::string cxxfilt = "/usr/bin/c++filt";
  if (access(cxxfilt.c_str(), X_OK) != 0) GTEST_SKIP() << "binutils' c++filt is not installed";
  std::vector<Row> rows = ReadRows("cpp.tsv");
  std::vector<std::string> argv = {cxxfilt};
  for (const Row& row : rows) argv.push_back(row.mangled);
  nativeprof::testing::CommandResult r = nativeprof::testing::RunCommand(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n');
  ASSERT_GE(lines.size(), rows.size());
  int same = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(DemangleForDisplay(rows[i].mangled, {}), lines[i]) << Where("cpp.tsv", rows[i]);
    same += DemangleForDisplay(rows[i].mangled, {}) == lines[i];
  }
  std::printf("c++filt cross-check: %d/%zu identical\n", same, rows.size());
}

}  // namespace
}  // namespace nativeprof::symbolize
