// gpubench: the command-line client. See `gpubench --help`.
#include <iostream>
#include <string>
#include <vector>

#include "client/cli.h"

int main(int argc, char** argv) {
  return gpubench::client::RunCli(std::vector<std::string>(argv + 1, argv + argc),
                                  std::cout, std::cerr);
}
