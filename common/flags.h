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
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpubench {

class FlagParser {
 public:
  // Sets the flags named in argv[1..]; returns the other arguments, in order.
  // InvalidArgument naming the flag for an unknown flag, a missing value or
  // one that does not parse. "--help" or "-h" sets help_requested().
  absl::StatusOr<std::vector<std::string>> Parse(int argc, const char* const* argv);

  // Sets, from a file of "name = value" lines ('#' starts a comment), every
  // flag the command line did not set. InvalidArgument naming the line.
  absl::Status ApplyConfigFile(const std::string& path);

  bool help_requested() const { return help_requested_; }

 private:
  // Sets one flag from text; a list flag's values are collected, and set by
  // FinishLists.
  absl::Status Set(const std::string& name, const std::string& value, const std::string& where);
  absl::Status FinishLists(const std::string& where);

  bool help_requested_ = false;
  std::set<std::string> set_on_command_line_;  // canonical (underscore) names
  // Every value given to each list flag so far, in order.
  std::vector<std::pair<std::string, std::vector<std::string>>> lists_;
};

// "--name VALUE  help (default: D)" for every flag defined in a file whose
// path ends with file_suffix (e.g. "server/main.cc"), hyphenated, sorted.
std::string FlagsHelp(absl::string_view file_suffix);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_FLAGS_H_
