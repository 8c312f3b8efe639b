// The daemon's Prometheus metrics: its queue, what its store holds, and live
// readings of its GPUs under DCGM exporter's names, in Prometheus's text
// exposition format (version 0.0.4).
#ifndef GPUBENCH_SERVER_METRICS_H_
#define GPUBENCH_SERVER_METRICS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "gpubench/v1/job.pb.h"
#include "launcher/telemetry.h"

namespace gpubench::storage {
class Store;
}

namespace gpubench::server {

class JobManager;

// Label name and value pairs; values are escaped when written.
using Labels = std::vector<std::pair<std::string, std::string>>;

// Writes the text format one family at a time: Family, then its samples.
class MetricsWriter {
 public:
  // The HELP and TYPE lines ("gauge", "counter") of the family that follows.
  void Family(absl::string_view name, absl::string_view type, absl::string_view help);
  // One sample of the current family. Counters' names end in "_total".
  void Sample(absl::string_view name, const Labels& labels, double value);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// Live readings of this host's GPUs through NVML, read when asked (a
// scrape), with DCGM exporter's metric names and its labels in snake_case
// (gpu, uuid, device, model_name, hostname). Without NVML there are none, and
// gpubench_gpu_telemetry_available says 0. Thread-safe.
class GpuGauges {
 public:
  // Opens NVML for each GPU the host probe found, by UUID.
  explicit GpuGauges(const v1::HostInfo& host);
  void Write(MetricsWriter* out);

 private:
  struct Gpu {
    v1::GpuInfo info;
    std::unique_ptr<telemetry::Source> nvml;
  };
  const std::string hostname_;
  std::string unavailable_;  // why there are no readings
  absl::Mutex mu_;           // NVML sources are read one caller at a time
  std::vector<Gpu> gpus_ ABSL_GUARDED_BY(mu_);
};

// The whole /metrics page. A store that cannot be read leaves its families
// out and sets gpubench_store_readable to 0; the rest is still served.
std::string RenderMetrics(JobManager* jobs, storage::Store* store, GpuGauges* gpus);

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_METRICS_H_
