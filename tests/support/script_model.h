// Hostile and odd user models for the attack tests, and the job that runs
// one: a TorchScript archive made from source by LibTorch (tests/tools/script_model.cc), as Python's
// torch.jit.save would. Needs GPUBENCH_SCRIPT_MODEL_PATH (a build with the
// worker); without it, ScriptModel returns nothing and the test skips.
#ifndef GPUBENCH_TESTS_SUPPORT_SCRIPT_MODEL_H_
#define GPUBENCH_TESTS_SUPPORT_SCRIPT_MODEL_H_

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "gpubench/v1/spec.pb.h"

namespace gpubench::testing_support {

// A job that runs one user model once on the CPU (inputs [1, 16]): by path,
// or by an upload's sha256.
inline v1::JobSpec ModelSpec(const std::string& path, const std::string& sha256 = "") {
  v1::JobSpec spec;
  v1::RunConfig* c = spec.mutable_base();
  c->set_workload("torchscript");
  c->set_device("cpu");
  c->set_mode(v1::MODE_INFER);
  c->set_batch_size(1);
  c->mutable_params()->set_model_path(path);
  c->mutable_params()->set_model_sha256(sha256);
  auto* in = c->mutable_params()->add_inputs();
  in->add_shape(1);
  in->add_shape(16);
  spec.mutable_measurement()->set_min_iterations(1);
  spec.mutable_measurement()->set_max_time_ms(500);
  return spec;
}

// Saves a module whose methods are source at path; returns the archive's
// bytes ("" without the tool).
inline std::string ScriptModel(const std::string& path, const std::string& source) {
#ifdef GPUBENCH_SCRIPT_MODEL_PATH
  const std::string command = std::string(GPUBENCH_SCRIPT_MODEL_PATH) + " '" + path + "' '" +
                              source + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) output.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0) << output;
#else
  (void)source;
#endif
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace gpubench::testing_support

#endif  // GPUBENCH_TESTS_SUPPORT_SCRIPT_MODEL_H_
