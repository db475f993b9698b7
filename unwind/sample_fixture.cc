#include "unwind/sample_fixture.h"

#include <elf.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/text_escape.h"

namespace nativeprof::unwind {
namespace {

struct SampleHeader {
  uint32_t pid, tid, nregs, nchain, stack_size, pad;
  uint64_t abi, requested;
};

absl::Status WriteGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb9");
  if (f == nullptr) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  const bool ok = bytes.empty() ||
                  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
                      static_cast<int>(bytes.size());
  if (gzclose(f) != Z_OK || !ok) return absl::DataLossError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadGz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::string out;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, n);
  gzclose(f);
  if (n < 0) return absl::DataLossError(absl::StrCat("corrupt ", path));
  return out;
}

void Append(std::string* out, const void* p, size_t n) {
  out->append(static_cast<const char*>(p), n);
}

}  // namespace

FixtureSample FixtureSample::FromView(const sampler::SampleView& s) {
  FixtureSample f;
  f.pid = s.pid;
  f.tid = s.tid;
  f.regs_abi = s.regs_abi;
  f.stack_requested = s.stack_user_requested;
  f.regs.assign(s.regs_user.begin(), s.regs_user.end());
  f.callchain.assign(s.callchain.begin(), s.callchain.end());
  f.stack.assign(s.stack_user.begin(), s.stack_user.end());
  return f;
}

sampler::SampleView FixtureSample::View() const {
  sampler::SampleView v;
  v.pid = pid;
  v.tid = tid;
  v.regs_abi = regs_abi;
  v.regs_user = regs;
  v.callchain = callchain;
  v.stack_user = stack;
  v.stack_user_requested = stack_requested;
  v.ip = regs.size() > 8 ? regs[8] : 0;
  return v;
}

void ZeroAllButUnwindTables(std::string* image) {
  if (image->size() < sizeof(Elf64_Ehdr)) return;
  uint8_t* d = reinterpret_cast<uint8_t*>(image->data());
  Elf64_Ehdr eh;
  std::memcpy(&eh, d, sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return;
  std::vector<bool> keep(image->size(), false);
  auto keep_range = [&](uint64_t off, uint64_t size) {
    for (uint64_t i = off; i < off + size && i < keep.size(); ++i) keep[i] = true;
  };
  keep_range(0, sizeof(eh));
  keep_range(eh.e_phoff, uint64_t{eh.e_phnum} * eh.e_phentsize);
  keep_range(eh.e_shoff, uint64_t{eh.e_shnum} * eh.e_shentsize);
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  for (size_t i = 0; i < sh.size(); ++i) {
    const uint64_t off = eh.e_shoff + i * eh.e_shentsize;
    if (off + sizeof(Elf64_Shdr) > image->size()) return;
    std::memcpy(&sh[i], d + off, sizeof(Elf64_Shdr));
  }
  if (eh.e_shstrndx >= sh.size()) return;
  const Elf64_Shdr& strtab = sh[eh.e_shstrndx];
  // Names are read from the table in place: it must lie inside the image.
  if (strtab.sh_offset > image->size() || strtab.sh_size > image->size() - strtab.sh_offset) {
    return;
  }
  keep_range(strtab.sh_offset, strtab.sh_size);
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_type == SHT_NOBITS || s.sh_name >= strtab.sh_size) continue;
    const char* name = reinterpret_cast<const char*>(d + strtab.sh_offset + s.sh_name);
    const std::string_view n(name, strnlen(name, strtab.sh_size - s.sh_name));
    if (n == ".eh_frame" || n == ".eh_frame_hdr" || n == ".debug_frame" || s.sh_type == SHT_NOTE ||
        n == ".symtab" || n == ".strtab" || n == ".dynsym" || n == ".dynstr") {
      keep_range(s.sh_offset, s.sh_size);
    }
  }
  for (size_t i = 0; i < keep.size(); ++i) {
    if (!keep[i]) d[i] = 0;
  }
}

absl::Status WriteSampleFixture(const std::string& dir, const SampleFixture& fixture,
                                const std::vector<std::string>& module_files,
                                const std::vector<bool>& zero_all_but_unwind) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string text = absl::StrFormat("regs_mask %x\n", fixture.regs_mask);
  for (size_t i = 0; i < fixture.modules.size(); ++i) {
    const FixtureModule& m = fixture.modules[i];
    const std::string& src = i < module_files.size() ? module_files[i] : std::string();
    std::string file = "-";
    if (!src.empty()) {
      auto bytes = ReadSmallFile(src);
      if (!bytes.ok()) return bytes.status();
      if (i < zero_all_but_unwind.size() && zero_all_but_unwind[i]) ZeroAllButUnwindTables(&*bytes);
      file = m.file.empty() ? absl::StrCat("module", i) : m.file;
      NP_RETURN_IF_ERROR(WriteGz(absl::StrCat(dir, "/", file, ".gz"), *bytes));
    }
    absl::StrAppend(&text, "module ", i, " ", file, " ", m.original_path, "\n");
  }
  for (const FixtureMap& m : fixture.maps) {
    absl::StrAppendFormat(&text, "map %x %x %x %d %d\n", m.start, m.end, m.offset, m.prot,
                          m.module);
  }
  NP_RETURN_IF_ERROR(WriteFileAtomically(absl::StrCat(dir, "/fixture.txt"), text));
  std::string bin;
  for (const FixtureSample& s : fixture.samples) {
    SampleHeader h{s.pid, s.tid, static_cast<uint32_t>(s.regs.size()),
                   static_cast<uint32_t>(s.callchain.size()), static_cast<uint32_t>(s.stack.size()),
                   0, s.regs_abi, s.stack_requested};
    Append(&bin, &h, sizeof(h));
    Append(&bin, s.regs.data(), s.regs.size() * 8);
    Append(&bin, s.callchain.data(), s.callchain.size() * 8);
    Append(&bin, s.stack.data(), s.stack.size());
    bin.append((8 - s.stack.size() % 8) % 8, '\0');
  }
  return WriteGz(absl::StrCat(dir, "/samples.gz"), bin);
}

LoadedFixture::~LoadedFixture() {
  if (!temp_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(temp_dir_, ec);
  }
}

absl::StatusOr<std::unique_ptr<LoadedFixture>> LoadedFixture::Load(const std::string& dir) {
  std::unique_ptr<LoadedFixture> f(new LoadedFixture());
  NP_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(absl::StrCat(dir, "/fixture.txt")));
  const char* tmp = getenv("TMPDIR");
  std::string templ = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/np-fixture-XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) return absl::UnavailableError("mkdtemp failed");
  f->temp_dir_ = templ;
  std::vector<sampler::ModuleId> ids;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<std::string> w = absl::StrSplit(line, ' ');
    const auto bad =
        absl::DataLossError(absl::StrCat("bad fixture line: ", EscapeForMessage(line)));
    if (w[0] == "regs_mask" && w.size() == 2) {
      if (!absl::SimpleHexAtoi(w[1], &f->data_.regs_mask)) return bad;
    } else if (w[0] == "module" && w.size() >= 4) {
      FixtureModule m{w[3], w[2] == "-" ? "" : w[2]};
      sampler::ModuleInfo info;
      if (!m.file.empty()) {
        NP_ASSIGN_OR_RETURN(std::string bytes, ReadGz(absl::StrCat(dir, "/", m.file, ".gz")));
        info.path = absl::StrCat(f->temp_dir_, "/", m.file);
        NP_RETURN_IF_ERROR(WriteFileAtomically(info.path, bytes));
      } else if (m.original_path.empty() || m.original_path[0] == '[' ||
                 m.original_path.rfind("//anon", 0) == 0) {
        info.path = m.original_path;
      } else {
        // Not stored: a path that never opens, so the unwinder treats it like a missing file.
        info.path = absl::StrCat("/nonexistent-fixture-module", m.original_path);
      }
      ids.push_back(f->modules_.Intern(info));
      f->data_.modules.push_back(std::move(m));
    } else if (w[0] == "map" && w.size() == 6) {
      FixtureMap m;
      if (!absl::SimpleHexAtoi(w[1], &m.start) || !absl::SimpleHexAtoi(w[2], &m.end) ||
          !absl::SimpleHexAtoi(w[3], &m.offset) || !absl::SimpleAtoi(w[4], &m.prot) ||
          !absl::SimpleAtoi(w[5], &m.module) || m.module >= ids.size()) {
        return bad;
      }
      f->data_.maps.push_back(m);
      f->address_space_.Map({m.start, m.end, m.offset, m.prot, ids[m.module]});
    } else {
      return bad;
    }
  }
  NP_ASSIGN_OR_RETURN(std::string bin, ReadGz(absl::StrCat(dir, "/samples.gz")));
  size_t pos = 0;
  while (pos + sizeof(SampleHeader) <= bin.size()) {
    SampleHeader h;
    std::memcpy(&h, bin.data() + pos, sizeof(h));
    pos += sizeof(h);
    const size_t need = (size_t{h.nregs} + h.nchain) * 8 + ((h.stack_size + 7) & ~size_t{7});
    if (bin.size() - pos < need) return absl::DataLossError("truncated samples.gz");
    FixtureSample s;
    s.pid = h.pid;
    s.tid = h.tid;
    s.regs_abi = h.abi;
    s.stack_requested = h.requested;
    s.regs.resize(h.nregs);
    std::memcpy(s.regs.data(), bin.data() + pos, h.nregs * 8);
    pos += h.nregs * 8;
    s.callchain.resize(h.nchain);
    std::memcpy(s.callchain.data(), bin.data() + pos, h.nchain * 8);
    pos += h.nchain * 8;
    s.stack.assign(bin.data() + pos, bin.data() + pos + h.stack_size);
    pos += (h.stack_size + 7) & ~size_t{7};
    f->data_.samples.push_back(std::move(s));
  }
  return f;
}

}  // namespace nativeprof::unwind
