// The built-in workloads' entries, one file each (common/workloads/NAME.cc),
// for workload_registry.cc's list alone.
#ifndef GPUBENCH_COMMON_WORKLOADS_BUILTIN_H_
#define GPUBENCH_COMMON_WORKLOADS_BUILTIN_H_

#include "common/workload_registry.h"

namespace gpubench::workloads {

WorkloadInfo Mlp();
WorkloadInfo SimpleCnn();
WorkloadInfo ResNet18();
WorkloadInfo ResNet50();
WorkloadInfo UNet();
WorkloadInfo BiLstm();
WorkloadInfo CnnLstm();
WorkloadInfo Transformer();
WorkloadInfo Matmul();
WorkloadInfo Copy();
WorkloadInfo Empty();
WorkloadInfo TorchScript();
WorkloadInfo Collective();
WorkloadInfo Ddp();

}  // namespace gpubench::workloads

#endif  // GPUBENCH_COMMON_WORKLOADS_BUILTIN_H_
