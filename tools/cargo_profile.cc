#include "tools/cargo_profile.h"

#include <cpptoml.h>

#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/cargo_options.h"

namespace nativeprof::tools {
namespace {

// A TOML value as the string Cargo's own environment spelling of it would be.
std::string ValueText(const std::shared_ptr<cpptoml::base>& value) {
  if (!value) return "";
  if (auto b = value->as<bool>()) return b->get() ? "true" : "false";
  if (auto i = value->as<int64_t>()) return std::to_string(i->get());
  if (auto s = value->as<std::string>()) return s->get();
  return "";
}

// The profile Cargo makes a built-in one inherit from; "" for the roots.
std::string BuiltInParent(const std::string& profile) {
  if (profile == "bench") return "release";
  if (profile == "test" || profile == "doc") return "dev";
  return "";
}

// Cargo's defaults for the two root profiles (what applies when nothing sets a key).
std::string RootDefault(const std::string& root, const std::string& key) {
  if (key == "debug") return root == "dev" ? "true" : "false";
  if (key == "strip") return "none";
  if (key == "lto") return "false";
  return "";
}

bool IsOff(const std::string& v) { return v.empty() || v == "false" || v == "0" || v == "none"; }

// table[key], or null when absent (cpptoml's get() throws on a missing key).
std::shared_ptr<cpptoml::base> Get(const std::shared_ptr<cpptoml::table>& table,
                                   const std::string& key) {
  return table && table->contains(key) ? table->get(key) : nullptr;
}

}  // namespace

bool CargoProfileSettings::HasLineTables() const {
  return !IsOff(debug) && debug != "line-directives-only";
}

bool CargoProfileSettings::Strips() const {
  return strip == "symbols" || strip == "true" || strip == "debuginfo";
}

std::string CargoProfileSettings::Warning() const {
  std::vector<std::string> settings;
  std::vector<std::string> fixes;
  std::string effect;
  if (Strips()) {
    settings.push_back(absl::StrCat("strip = \"", strip, "\""));
    fixes.push_back(absl::StrCat(CargoProfileVariable(name, "strip"), "=false"));
    effect = strip == "debuginfo" ? "inline frames and file:line are lost" : "frames will be unnamed";
  }
  if (split_debuginfo == "packed" || split_debuginfo == "unpacked") {
    settings.push_back(absl::StrCat("split-debuginfo = \"", split_debuginfo, "\""));
    fixes.push_back(absl::StrCat(CargoProfileVariable(name, "split-debuginfo"), "=off"));
    if (effect.empty()) effect = "the program's inline frames and file:line are lost";
  }
  if (!IsOff(lto) && lto != "off") {
    settings.push_back(absl::StrCat("lto = \"", lto, "\""));
    fixes.push_back(absl::StrCat(CargoProfileVariable(name, "lto"), "=false"));
    if (effect.empty()) effect = "functions inlined across crates show only as inline frames";
  }
  if (settings.empty()) return "";
  return absl::StrCat("profile '", name, "' sets ", absl::StrJoin(settings, " and "), ": ", effect,
                      "; profile with ", absl::StrJoin(fixes, " "), ", or a profile without ",
                      settings.size() == 1 ? "it" : "them");
}

absl::StatusOr<CargoProfileSettings> ReadCargoProfile(
    const std::string& manifest, const std::string& profile,
    const std::function<const char*(const std::string&)>& getenv) {
  std::shared_ptr<cpptoml::table> root;
  try {
    std::istringstream in(manifest);
    cpptoml::parser parser(in);
    root = parser.parse();
  } catch (const cpptoml::parse_exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("Cargo.toml: ", e.what()));
  }
  std::shared_ptr<cpptoml::table> profiles = root->get_table("profile");

  // The chain from `profile` up to its root (dev or release), most specific first.
  std::vector<std::string> chain;
  for (std::string p = profile; !p.empty();) {
    for (const std::string& seen : chain) {
      if (seen == p) {
        return absl::InvalidArgumentError(
            absl::StrCat("Cargo.toml: profile '", p, "' inherits from itself"));
      }
    }
    chain.push_back(p);
    std::string parent = BuiltInParent(p);
    std::shared_ptr<cpptoml::table> table = profiles ? profiles->get_table(p) : nullptr;
    if (table) {
      std::string inherits = ValueText(Get(table, "inherits"));
      if (!inherits.empty()) parent = inherits;
    }
    if (p == "dev" || p == "release") break;
    p = parent;
  }

  bool from_environment = false;
  auto lookup = [&](const std::string& key) -> std::string {
    from_environment = false;
    for (const std::string& p : chain) {
      // Cargo's configuration (the environment among it) overrides Cargo.toml for a profile.
      const char* env = getenv(CargoProfileVariable(p, key));
      if (env != nullptr) {
        from_environment = true;
        return env;
      }
      std::shared_ptr<cpptoml::table> table = profiles ? profiles->get_table(p) : nullptr;
      if (table && table->contains(key)) return ValueText(Get(table, key));
    }
    return RootDefault(chain.back(), key);
  };
  CargoProfileSettings s;
  s.name = profile;
  s.debug = lookup("debug");
  s.strip = lookup("strip");
  s.strip_from_environment = from_environment;
  s.split_debuginfo = lookup("split-debuginfo");
  s.split_debuginfo_from_environment = from_environment;
  s.lto = lookup("lto");
  return s;
}

}  // namespace nativeprof::tools
