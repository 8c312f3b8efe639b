// The arithmetic of the built-in models' costs (WorkloadInfo::cost): MACs and
// parameters of their layers, shared by the workloads' entries
// (common/workloads/NAME.cc). Plain C++.
#ifndef GPUBENCH_COMMON_MODEL_COST_H_
#define GPUBENCH_COMMON_MODEL_COST_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/workload_registry.h"

namespace gpubench::cost {

// The output side of a convolution or pool over a square input of side in.
inline int64_t ConvOutSize(int64_t in, int64_t kernel, int64_t stride, int64_t padding) {
  return (in + 2 * padding - kernel) / stride + 1;
}

// Multiply-adds of a square convolution with out_size² outputs.
inline double ConvMacs(int64_t in, int64_t out, int64_t kernel, int64_t out_size) {
  return static_cast<double>(in) * out * kernel * kernel * out_size * out_size;
}

inline int64_t ConvParams(int64_t in, int64_t out, int64_t kernel, bool bias) {
  return in * out * kernel * kernel + (bias ? out : 0);
}

inline int64_t LinearParams(int64_t in, int64_t out) { return in * out + out; }

// BatchNorm's and LayerNorm's weight and bias (running statistics are
// buffers, not parameters).
inline int64_t NormParams(int64_t channels) { return 2 * channels; }

// One direction of one LSTM layer: four gates, each an input and a hidden
// matrix, and two biases (PyTorch's b_ih and b_hh).
inline int64_t LstmParams(int64_t input_size, int64_t hidden_size) {
  return 4 * hidden_size * (input_size + hidden_size) + 8 * hidden_size;
}

// Per time step of one direction of one LSTM layer.
inline double LstmStepMacs(int64_t input_size, int64_t hidden_size) {
  return 4.0 * hidden_size * (input_size + hidden_size);
}

// A MAC count as FLOPs: a multiply-add is two.
inline double Flops(double macs) { return 2 * macs; }

// A model's matrix work in multiply-adds, added layer by layer: the forward
// pass, and a training step's backward pass, each product as autograd runs
// it. A layer with weights (linear, convolution, LSTM gates) costs its
// forward MACs again for its weights' gradient, and again for its input's
// unless that input needs none: the network's own images. An embedding is a
// lookup both ways, no product; the layer after it still passes a gradient
// back to it. A product of two activations (attention's QK^T and AV) costs
// its forward MACs twice again, once for each side. Elementwise work (norms,
// activations, the optimizer) is not counted.
struct Work {
  double forward = 0;
  double backward = 0;
  // The full square of attention's products, forward (ModelCost's
  // attention_flops_per_sample).
  double attention = 0;

  void Weights(double macs, bool input_gradient = true) {
    forward += macs;
    backward += input_gradient ? 2 * macs : macs;
  }
  void Activations(double macs) {
    forward += macs;
    backward += 2 * macs;
  }
  // Attention over t positions of width d, for one sample of t queries
  // (every query against every key: a causal kernel that skips the masked
  // blocks runs less, which the engine counts where it knows the kernel).
  void Attention(double t, double d) {
    Activations(2 * t * t * d);
    attention += 2 * t * t * d;
  }

  // As a ModelCost's FLOPs (its parameters left to the caller).
  ModelCost Cost(int64_t parameters) const {
    return {parameters, Flops(forward), Flops(forward + backward), Flops(attention)};
  }
};

// mlp's hidden layers' widths by model_size; empty for another size
// (common/workloads/mlp.cc; the engine builds the same).
std::vector<int64_t> MlpHiddenWidths(std::string_view model_size);

}  // namespace gpubench::cost

#endif  // GPUBENCH_COMMON_MODEL_COST_H_
