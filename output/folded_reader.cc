#include "output/folded_reader.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/text_escape.h"

namespace nativeprof::output {

using symbolize::Profile;
using symbolize::ProfileFrame;
using symbolize::ProfileFrameKind;
using symbolize::ProfileStack;

namespace {

// Splits a FlameGraph annotation off a frame name.
std::pair<absl::string_view, ProfileFrameKind> SplitSuffix(absl::string_view name) {
  if (name.size() > 4 && name.substr(name.size() - 4, 2) == "_[" && name.back() == ']') {
    switch (name[name.size() - 2]) {
      case 'k':
        return {name.substr(0, name.size() - 4), ProfileFrameKind::kKernel};
      case 'i':
        return {name.substr(0, name.size() - 4), ProfileFrameKind::kInlined};
      case 'j':
        return {name.substr(0, name.size() - 4), ProfileFrameKind::kJit};
      default:
        break;
    }
  }
  return {name, ProfileFrameKind::kUser};
}

// Text has no NUL and few control bytes; a pprof, gzip or SVG-in-a-zip file has many.
bool LooksBinary(absl::string_view line) {
  size_t control = 0;
  for (char c : line.substr(0, 512)) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u == 0) return true;
    control += u < 0x20 && u != '\t';
  }
  return control > 4;
}

// What a binary first line is, for the message: a gzip file is most likely a pprof profile (the
// format record writes to X.pb.gz), whose folded stacks record writes when asked for them too.
std::string NotFolded(absl::string_view line) {
  if (absl::StartsWith(line, "\x1f\x8b")) {
    return "gzip data (a pprof profile? record writes folded stacks too with -o X.folded), not a "
           "folded profile";
  }
  return "binary data, not a folded profile";
}

}  // namespace

absl::StatusOr<Profile> ParseFolded(absl::string_view text) {
  Profile profile;
  profile.weight_unit = "samples";
  profile.event.clear();  // folded files do not say which event was sampled
  // (name + kind byte) -> frame index; (thread + frame list) -> stack index.
  absl::flat_hash_map<std::string, uint32_t> frame_ids;
  absl::flat_hash_map<std::string, uint32_t> stack_ids;
  std::string frame_key;
  std::string stack_key;
  std::vector<uint32_t> frames;
  uint64_t total = 0;
  size_t line_no = 0;
  bool first_line = true;  // the first that is not blank (an uncompressed pprof file starts \n)
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == absl::string_view::npos) continue;
    const size_t sep = line.find_last_of(" \t");
    // A first line that does not parse: said as such when it is binary data (a pprof or gzip
    // file given by mistake) or JSON (the metadata beside a profile, a speedscope file), not as
    // a count that is not one. A frame name may hold any byte: a line that parses is a line.
    const bool bad_count =
        sep == absl::string_view::npos || sep + 1 == line.size() ||
        line.substr(sep + 1).find_first_not_of("0123456789") != absl::string_view::npos;
    if (first_line && bad_count) {
      if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "{")) {
        return absl::InvalidArgumentError(absl::StrCat(
            "line ", line_no,
            ": JSON (a recording's metadata, or a speedscope file), not a folded profile"));
      }
      if (LooksBinary(line)) {
        return absl::InvalidArgumentError(absl::StrCat("line ", line_no, ": ", NotFolded(line)));
      }
    }
    first_line = false;
    if (sep == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_no, ": '", EscapeForMessage(line),
                       "' has no sample count (expected 'comm;frame;... COUNT')"));
    }
    absl::string_view count_text = line.substr(sep + 1);
    if (count_text.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", line_no, " ends in a space or tab: the sample count must follow the last one"));
    }
    uint64_t count = 0;
    if (bad_count) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no, ": sample count '",
                                                     EscapeForMessage(count_text),
                                                     "' is not a non-negative integer"));
    }
    if (!absl::SimpleAtoi(count_text, &count) || count > kMaxFoldedTotal - total) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", line_no, ": sample count ", EscapeForMessage(count_text),
          " takes the total beyond 2^63 - 1, which pprof and the reports cannot hold"));
    }
    total += count;
    absl::string_view stack_text = line.substr(0, sep);
    while (!stack_text.empty() && (stack_text.back() == ' ' || stack_text.back() == '\t')) {
      stack_text.remove_suffix(1);
    }
    if (stack_text.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no, ": empty stack"));
    }
    frames.clear();
    absl::string_view thread;
    bool first = true;
    for (absl::string_view element : absl::StrSplit(stack_text, ';')) {
      if (first) {
        thread = element;
        first = false;
        continue;
      }
      auto [name, kind] = SplitSuffix(element);
      frame_key.assign(name.data(), name.size());
      frame_key.push_back(static_cast<char>('0' + static_cast<int>(kind)));
      auto [it, inserted] =
          frame_ids.try_emplace(frame_key, static_cast<uint32_t>(profile.frames.size()));
      if (inserted) {
        ProfileFrame f;
        f.function = std::string(name);
        f.kind = kind;
        profile.frames.push_back(std::move(f));
      }
      frames.push_back(it->second);
    }
    stack_key.assign(thread.data(), thread.size());
    for (uint32_t id : frames) absl::StrAppend(&stack_key, ";", id);
    auto [sit, sinserted] =
        stack_ids.try_emplace(stack_key, static_cast<uint32_t>(profile.stacks.size()));
    if (sinserted) {
      ProfileStack s;
      s.thread_name = std::string(thread);
      s.frames = frames;
      profile.stacks.push_back(std::move(s));
    }
    ProfileStack& s = profile.stacks[sit->second];
    s.samples += count;
    s.weight += count;
  }
  return profile;
}

absl::StatusOr<Profile> ReadFoldedFile(const std::string& path) {
  // Binary data is told from its first line as ParseFolded tells it, before the rest is read: a
  // 1 GB core took 10 s to be refused, /dev/zero was read until memory ran out.
  auto binary_start = [&path](absl::string_view head) {
    size_t line_no = 0;
    size_t at = 0;
    while (at < head.size()) {
      ++line_no;
      const size_t end = std::min(head.find('\n', at), head.size());
      const absl::string_view line = head.substr(at, end - at);
      at = end + 1;
      if (line.find_first_not_of(" \t\r") == absl::string_view::npos) continue;
      // A whole line that parses is a line, whatever bytes its frames hold (a thread name set
      // with control bytes): only one that does not, or that runs past the head, is refused.
      if (!LooksBinary(line)) return absl::OkStatus();
      if (end < head.size() && ParseFolded(line).ok()) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": ", NotFolded(line)));
    }
    if (head.size() < kFileHeadBytes) return absl::OkStatus();  // the whole file, blank
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": its first ", kFileHeadBytes / 1024, " KiB are blank lines, not a folded profile"));
  };
  absl::StatusOr<std::string> text = ReadSmallFile(path, kMaxFoldedFileBytes, binary_start);
  if (!text.ok()) return text.status();  // already names the call and the path
  absl::StatusOr<Profile> profile = ParseFolded(*text);
  if (!profile.ok()) {
    // "line N: problem" -> "path:N: problem", the compiler convention editors understand.
    absl::string_view msg = profile.status().message();
    if (absl::ConsumePrefix(&msg, "line ")) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", msg));
    }
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", msg));
  }
  return profile;
}

}  // namespace nativeprof::output
