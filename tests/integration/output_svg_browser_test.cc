// The flame graph SVG in a real browser: headless Chromium (Debian's `chromium`) loads a test page
// that embeds the SVG file in an iframe (so the SVG is parsed as a standalone XML document, as
// when a user opens it), clicks a frame, types into the search box, presses Reset Zoom, and writes
// what it observed into the page, which --dump-dom prints.
#include <unistd.h>

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "output/folded_reader.h"
#include "output/profile_writer.h"
#include "tests/testing/test_support.h"

namespace nativeprof {
namespace {

using ::testing::HasSubstr;
using testing::MakeTempDir;
using testing::RunCommand;

bool FindChromium(std::string* path, std::string* why) {
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (::access(candidate, X_OK) == 0) {
      *path = candidate;
      return true;
    }
  }
  *why = "chromium is not installed (tools/setup.sh installs Debian's chromium package)";
  return false;
}

// The page: waits for the iframe, then drives the SVG's own UI with DOM events.
constexpr char kTestPage[] = R"html(<!DOCTYPE html>
<html><body>
<pre id="result">pending</pre>
<iframe id="f" src="flame.svg" width="1220" height="400"></iframe>
<script>
var out = [];
document.getElementById('f').addEventListener('load', function () {
  try {
    var doc = this.contentDocument, win = this.contentWindow;
    out.push('root=' + doc.documentElement.localName);
    out.push('api=' + typeof win.nativeprofFlame);
    var gs = doc.getElementById('frames').children;
    out.push('frames=' + gs.length);
    function find(prefix) {
      for (var i = 0; i < gs.length; i++) {
        if (gs[i].firstElementChild.textContent.indexOf(prefix) === 0) return gs[i];
      }
      return null;
    }
    var target = find(ZOOM_PREFIX), other = find(OTHER_PREFIX);
    var rect = target.querySelector('rect');
    out.push('width_before=' + rect.getAttribute('width'));
    target.querySelector('rect').dispatchEvent(new win.MouseEvent('click', {bubbles: true}));
    out.push('width_after=' + rect.getAttribute('width'));
    out.push('other_hidden=' + (other.style.display === 'none'));
    out.push('unzoom_hidden=' + doc.getElementById('unzoom').classList.contains('hidden'));
    target.dispatchEvent(new win.MouseEvent('mouseover', {bubbles: true}));
    out.push('details=' + doc.getElementById('details').textContent);
    var input = doc.getElementById('search');
    input.value = SEARCH_TERM;
    input.dispatchEvent(new win.Event('input', {bubbles: true}));
    out.push('matched=' + doc.getElementById('matched').textContent);
    var pink = 0;
    for (var i = 0; i < gs.length; i++) {
      if (gs[i].querySelector('rect').getAttribute('fill') === 'rgb(230,0,230)') pink++;
    }
    out.push('highlighted=' + pink);
    doc.getElementById('unzoom').dispatchEvent(new win.MouseEvent('click', {bubbles: true}));
    out.push('width_reset=' + rect.getAttribute('width'));
    out.push('other_shown=' + (other.style.display !== 'none'));
  } catch (e) {
    out.push('error=' + e);
  }
  document.getElementById('result').textContent = 'RESULT\n' + out.join('\n') + '\nEND';
});
</script>
</body></html>
)html";

struct BrowserRun {
  std::map<std::string, std::string> values;
  std::string raw;
};

// Renders `folded` to flame.svg, loads the page in Chromium and returns what the page observed.
BrowserRun RunInChromium(const std::string& chromium, const std::string& folded,
                         const std::string& zoom_prefix, const std::string& other_prefix,
                         const std::string& search_term) {
  BrowserRun run;
  const std::string dir = MakeTempDir();
  absl::StatusOr<symbolize::Profile> p = output::ParseFolded(folded);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return run;
  EXPECT_TRUE(output::WriteProfile(*p, dir + "/flame.svg", output::OutputFormat::kSvg, {}).ok());
  std::string page = kTestPage;
  page = absl::StrReplaceAll(page, {{"ZOOM_PREFIX", "'" + zoom_prefix + "'"},
                                    {"OTHER_PREFIX", "'" + other_prefix + "'"},
                                    {"SEARCH_TERM", "'" + search_term + "'"}});
  EXPECT_TRUE(WriteFileAtomically(dir + "/test.html", page).ok());
  testing::CommandResult r = RunCommand(
      {"timeout", "-k", "5", "100", chromium, "--headless", "--no-sandbox", "--disable-gpu",
       "--disable-background-networking", "--disable-component-update", "--disable-sync",
       "--no-first-run", "--user-data-dir=" + dir + "/profile",
       // Lets the test page reach into the file:// iframe (file URLs are opaque origins).
       "--allow-file-access-from-files", "--enable-logging=stderr", "--v=0",
       "--virtual-time-budget=20000", "--dump-dom", "file://" + dir + "/test.html"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Script errors in the SVG surface as console messages.
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("Uncaught"))) << r.err;
  run.raw = r.out;
  const size_t begin = r.out.find("RESULT\n");
  const size_t end = r.out.find("\nEND");
  EXPECT_NE(begin, std::string::npos) << r.out.substr(0, 2000) << "\n" << r.err;
  if (begin == std::string::npos || end == std::string::npos) return run;
  for (absl::string_view line :
       absl::StrSplit(r.out.substr(begin + 7, end - begin - 7), '\n', absl::SkipEmpty())) {
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    run.values[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return run;
}

TEST(OutputSvgBrowserTest, LoadsZoomsSearchesAndResets) {
  std::string chromium, why;
  if (!FindChromium(&chromium, &why)) GTEST_SKIP() << why;
  const std::string folded = testing::ReadFileOrEmpty(
      testing::SourcePath("tests/testdata/output/small.folded"));
  BrowserRun run = RunInChromium(chromium, folded, "parse_input (", "worker (", "hash_block");
  auto& v = run.values;
  EXPECT_EQ(v["error"], "");
  EXPECT_EQ(v["root"], "svg");  // an XML parse error would give <parsererror>
  EXPECT_EQ(v["api"], "object");
  EXPECT_EQ(v["frames"], "23");
  // parse_input is 17% of 1180 px wide; zoomed it fills the 1180 px.
  EXPECT_EQ(v["width_before"], "200.60");
  EXPECT_EQ(v["width_after"], "1180.00");
  EXPECT_EQ(v["other_hidden"], "true");
  EXPECT_EQ(v["unzoom_hidden"], "false");
  EXPECT_EQ(v["details"], "parse_input (17 samples, 17.00%)");
  // hash_block appears under app (50) and worker (8): 58% in 2 frames.
  EXPECT_EQ(v["matched"], "Matched: 58.00% (58 samples, 2 frames)");
  EXPECT_EQ(v["highlighted"], "2");
  EXPECT_EQ(v["width_reset"], "200.60");
  EXPECT_EQ(v["other_shown"], "true");
}

TEST(OutputSvgBrowserTest, HundredThousandStacksStayUsable) {
  std::string chromium, why;
  if (!FindChromium(&chromium, &why)) GTEST_SKIP() << why;
  // 100,000 distinct stacks: a few heavy paths and a long tail of 1-sample stacks that the
  // writer prunes (narrower than 0.1 px).
  std::string folded = "app;main;heavy;inner_hot 400000\napp;main;medium 200000\n";
  for (int i = 0; i < 99998; ++i) {
    absl::StrAppend(&folded, "app;main;tail_", i % 97, ";leaf_", i, " ", 1 + i % 5, "\n");
  }
  BrowserRun run = RunInChromium(chromium, folded, "heavy (", "medium (", "inner_hot");
  auto& v = run.values;
  EXPECT_EQ(v["error"], "");
  EXPECT_EQ(v["root"], "svg");
  EXPECT_EQ(v["width_after"], "1180.00");
  EXPECT_EQ(v["other_hidden"], "true");
  EXPECT_THAT(v["matched"], HasSubstr("(400,000 samples, 1 frames)"));
}

}  // namespace
}  // namespace nativeprof
