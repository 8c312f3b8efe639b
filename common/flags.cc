#include "common/flags.h"

#include <algorithm>
#include <fstream>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace gpubench {
namespace {

// "on", "off,on", "true": what a switch may take as its value.
bool IsSwitchList(absl::string_view arg) {
  if (arg.empty()) return false;
  for (absl::string_view v : absl::StrSplit(arg, ',')) {
    if (v != "on" && v != "off" && v != "true" && v != "false" && v != "1" && v != "0" &&
        v != "yes" && v != "no") {
      return false;
    }
  }
  return true;
}

std::string Canonical(absl::string_view name) {
  return absl::StrReplaceAll(name, {{"-", "_"}});
}
std::string Hyphenated(absl::string_view name) {
  return absl::StrReplaceAll(name, {{"_", "-"}});
}

bool IsList(const absl::CommandLineFlag& flag) {
  return flag.IsOfType<std::vector<std::string>>();
}

}  // namespace

absl::CommandLineFlag* FlagParser::Find(const std::string& name) const {
  absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  if (flag == nullptr || flag->IsRetired()) return nullptr;
  if (!defined_in_.empty() && !absl::EndsWith(flag->Filename(), defined_in_)) return nullptr;
  return flag;
}

bool FlagParser::IsSetOnCommandLine(absl::string_view name) const {
  return set_on_command_line_.count(Canonical(name)) > 0;
}

absl::Status FlagParser::Set(const std::string& name, const std::string& value,
                             const std::string& where) {
  absl::CommandLineFlag* flag = Find(name);
  if (flag == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(where, "unknown flag --", Hyphenated(name)));
  }
  if (IsList(*flag)) {
    auto it = std::find_if(lists_.begin(), lists_.end(),
                           [&](const auto& l) { return l.first == name; });
    if (it == lists_.end()) it = lists_.insert(lists_.end(), {name, {}});
    it->second.push_back(value);
    return absl::OkStatus();
  }
  std::string error;
  if (!flag->ParseFrom(value, &error)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "--", Hyphenated(name), ": \"", value, "\": ", error));
  }
  return absl::OkStatus();
}

absl::Status FlagParser::FinishLists(const std::string& where) {
  for (const auto& [name, values] : lists_) {
    std::string error;
    if (!Find(name)->ParseFrom(absl::StrJoin(values, ","), &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "--", Hyphenated(name), ": ", error));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> FlagParser::Parse(int argc,
                                                           const char* const* argv) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_requested_ = true;
      continue;
    }
    if (arg == "-v" && Find("verbose") != nullptr) {  // the usual short spelling
      if (auto s = Set("verbose", "true", ""); !s.ok()) return s;
      set_on_command_line_.insert("verbose");
      continue;
    }
    if (arg == "--version") {
      version_requested_ = true;
      continue;
    }
    if (!absl::StartsWith(arg, "--") || arg == "--") {
      positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const absl::CommandLineFlag* flag = Find(Canonical(name));
    if (flag == nullptr && unknown_ != nullptr) {
      if (!inline_value && unknown_boolean_ && unknown_boolean_(name) &&
          (i + 1 >= argc || !IsSwitchList(argv[i + 1]))) {
        value = "true";  // a bare switch
      } else if (!inline_value) {
        if (i + 1 >= argc) {
          return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
        }
        value = argv[++i];
      }
      unknown_->emplace_back(name, value);
      continue;
    }
    name = Canonical(name);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", Hyphenated(name)));
    }
    if (!inline_value) {
      if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--", Hyphenated(name), " needs a value"));
      }
    }
    if (auto s = Set(name, value, ""); !s.ok()) return s;
    set_on_command_line_.insert(name);
  }
  if (auto s = FinishLists(""); !s.ok()) return s;
  return positional;
}

absl::Status FlagParser::ApplyConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read config file ", path));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string uncommented = line.substr(0, line.find('#'));
    const absl::string_view text = absl::StripAsciiWhitespace(uncommented);
    if (text.empty()) continue;
    const std::string where = absl::StrCat(path, ":", n, ": ");
    const size_t eq = text.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(where, "expected name = value"));
    }
    const std::string name = Canonical(absl::StripAsciiWhitespace(text.substr(0, eq)));
    const absl::CommandLineFlag* flag = Find(name);
    // The command line wins; a list takes the file's values too.
    if (set_on_command_line_.count(name) && flag != nullptr && !IsList(*flag)) continue;
    if (auto s = Set(name, std::string(absl::StripAsciiWhitespace(text.substr(eq + 1))), where);
        !s.ok()) {
      return s;
    }
  }
  return FinishLists(absl::StrCat(path, ": "));
}

std::vector<absl::CommandLineFlag*> FlagsDefinedIn(absl::string_view file_suffix) {
  std::vector<absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::EndsWith(flag->Filename(), file_suffix)) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  return flags;
}

std::string FlagsHelp(absl::string_view file_suffix) {
  const std::vector<absl::CommandLineFlag*> flags = FlagsDefinedIn(file_suffix);
  std::string out;
  for (const absl::CommandLineFlag* flag : flags) {
    const std::string value = flag->IsOfType<bool>() ? "" : " VALUE";
    const std::string def = flag->DefaultValue();
    absl::StrAppendFormat(&out, "  --%s%s\n      %s%s\n", Hyphenated(flag->Name()), value,
                          flag->Help(),
                          def.empty() || def == "false" ? "" : absl::StrCat(" (default ", def, ")"));
  }
  return out;
}

}  // namespace gpubench
