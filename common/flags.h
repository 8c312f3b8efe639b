// Command-line flags: Abseil flags (ABSL_FLAG in the program's main file),
// read with the spellings gpubench has always taken. A name may use hyphens
// or underscores (--data-dir or --data_dir); a value may follow with '=' or
// as the next argument; a bool flag alone means true; a list flag
// (std::vector<std::string>) given again adds to the list; and a config file
// of "name = value" lines fills what the command line left unset (and adds to
// lists).
#ifndef GPUBENCH_COMMON_FLAGS_H_
#define GPUBENCH_COMMON_FLAGS_H_

#include <set>
#include <utility>
#include <functional>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpubench {

class FlagParser {
 public:
  // Only flags defined in a file whose path ends with defined_in are known
  // ("": every flag in the binary).
  explicit FlagParser(std::string defined_in = "") : defined_in_(std::move(defined_in)) {}

  // Unknown flags go to *sink as (name as given, value) instead of being an
  // error; each takes a value ("--name=value" or "--name value"), except a
  // name `boolean` says is a switch: bare, or before anything but a list of
  // on/off words, it is "true". The CLI's spec flags come this way.
  void PassUnknownFlagsTo(std::vector<std::pair<std::string, std::string>>* sink,
                          std::function<bool(const std::string&)> boolean = nullptr) {
    unknown_ = sink;
    unknown_boolean_ = std::move(boolean);
  }

  // Sets the flags named in argv[1..]; returns the other arguments, in order.
  // InvalidArgument naming the flag for an unknown flag, a missing value or
  // one that does not parse. "--help" or "-h" sets help_requested(),
  // "--version" version_requested(); "-v" is "--verbose" where a bool flag
  // verbose is defined.
  absl::StatusOr<std::vector<std::string>> Parse(int argc, const char* const* argv);

  // Sets, from a file of "name = value" lines ('#' starts a comment), every
  // flag the command line did not set. InvalidArgument naming the line.
  absl::Status ApplyConfigFile(const std::string& path);

  bool help_requested() const { return help_requested_; }
  bool version_requested() const { return version_requested_; }
  // Whether Parse set the flag (either spelling of its name).
  bool IsSetOnCommandLine(absl::string_view name) const;

 private:
  // Sets one flag from text; a list flag's values are collected, and set by
  // FinishLists.
  absl::Status Set(const std::string& name, const std::string& value, const std::string& where);
  absl::Status FinishLists(const std::string& where);
  // The known flag of that (canonical) name, or null.
  absl::CommandLineFlag* Find(const std::string& name) const;

  const std::string defined_in_;
  std::function<bool(const std::string&)> unknown_boolean_;
  std::vector<std::pair<std::string, std::string>>* unknown_ = nullptr;
  bool help_requested_ = false;
  bool version_requested_ = false;
  std::set<std::string> set_on_command_line_;  // canonical (underscore) names
  // Every value given to each list flag so far, in order.
  std::vector<std::pair<std::string, std::vector<std::string>>> lists_;
};

// The flags defined in a file whose path ends with file_suffix, by name.
std::vector<absl::CommandLineFlag*> FlagsDefinedIn(absl::string_view file_suffix);

// "--name VALUE  help (default: D)" for every flag defined in a file whose
// path ends with file_suffix (e.g. "server/main.cc"), hyphenated, sorted.
std::string FlagsHelp(absl::string_view file_suffix);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_FLAGS_H_
