// The built-in workloads' entries, one file each (common/workloads/NAME.cc),
// for workload_registry.cc's list alone.
#ifndef GPUBENCH_COMMON_WORKLOADS_BUILTIN_H_
#define GPUBENCH_COMMON_WORKLOADS_BUILTIN_H_

#include <string_view>
#include <vector>

#include "common/workload_registry.h"

namespace gpubench::workloads {

// A named model size's dimensions (gpt "350m"); 0 keeps the default.
struct SizeShape {
  const char* name;
  int layers, width, heads, kv_heads, ffn, vocab;
};

// Sets d's dimensions to size's row of shapes: true for a listed size, and
// for "custom" (the spec's own dimensions, the defaults for the rest).
bool ApplySizeShape(const std::vector<SizeShape>& shapes, std::string_view size,
                    WorkloadDefaults* d);

WorkloadInfo Mlp();
WorkloadInfo SimpleCnn();
WorkloadInfo ResNet18();
WorkloadInfo ResNet50();
WorkloadInfo UNet();
WorkloadInfo BiLstm();
WorkloadInfo CnnLstm();
WorkloadInfo Transformer();
WorkloadInfo Gpt();
WorkloadInfo Llama();
WorkloadInfo Matmul();
WorkloadInfo Attention();
WorkloadInfo Copy();
WorkloadInfo Empty();
WorkloadInfo TorchScript();
WorkloadInfo Collective();
WorkloadInfo Ddp();

}  // namespace gpubench::workloads

#endif  // GPUBENCH_COMMON_WORKLOADS_BUILTIN_H_
