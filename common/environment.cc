#include "common/environment.h"

#include <unistd.h>

namespace gpubench {

std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (set.count(entry.substr(0, entry.find('='))) == 0) env.push_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> EnvironmentPointers(std::vector<std::string>& entries) {
  std::vector<char*> pointers;
  for (std::string& e : entries) pointers.push_back(e.data());
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace gpubench
