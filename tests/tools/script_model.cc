// script_model OUT.pt SOURCE: compiles TorchScript source (the methods of a
// module, e.g. "def forward(self, x): ...") with LibTorch and saves the
// module as an archive, as Python's torch.jit.save would. The attack tests
// write hostile models with it (file operators in forward) without Python.
#include <torch/script.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: script_model OUT.pt SOURCE\n";
    return 2;
  }
  try {
    torch::jit::Module module("m");
    module.define(argv[2]);
    module.save(argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "script_model: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
