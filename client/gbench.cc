#include "client/gbench.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/output.h"
#include "common/spec.h"
#include "common/version.h"
#include "report/facets.h"

namespace gpubench::client {
namespace {

// A number as JSON takes it (no NaN or infinity there: 0 instead).
std::string Number(double v) {
  if (!(v == v) || v > 1e300 || v < -1e300) return "0";
  return absl::StrFormat("%.12g", v);
}

// "mlp infer b8 fp32 cpu" -> "mlp/infer/b8/fp32/cpu": Google Benchmark's
// family/argument spelling, and names compare.py's filters can match.
std::string BenchmarkName(const v1::Run& run) {
  return absl::StrReplaceAll(report::DescribeConfig(run.config()), {{" ", "/"}});
}

}  // namespace

void PrintGbench(const std::vector<v1::Run>& runs, const std::string& executable,
                 std::ostream& out) {
  // Families in first-seen order; each config's runs are its repetitions.
  std::map<std::string, int> family, repetitions, seen;
  for (const v1::Run& r : runs) {
    const std::string name = BenchmarkName(r);
    family.emplace(name, static_cast<int>(family.size()));
    ++repetitions[name];
  }
  const std::string host = runs.empty() ? "" : runs.front().host_id();
  out << "{\n  \"context\": {\n"
      << "    \"date\": "
      << JsonString(absl::FormatTime("%Y-%m-%dT%H:%M:%S%Ez", absl::Now(), absl::UTCTimeZone()))
      << ",\n    \"host_name\": " << JsonString(host)
      << ",\n    \"executable\": " << JsonString(executable)
      << ",\n    \"library_build_type\": \"release\""
      << ",\n    \"gpubench_version\": " << JsonString(kGpubenchVersion) << "\n  },\n"
      << "  \"benchmarks\": [";
  bool first = true;
  for (const v1::Run& r : runs) {
    const std::string name = BenchmarkName(r);
    const v1::RunResult& res = r.result();
    out << (first ? "\n" : ",\n") << "    {\n"
        << "      \"name\": " << JsonString(name) << ",\n"
        << "      \"family_index\": " << family[name] << ",\n"
        << "      \"per_family_instance_index\": 0,\n"
        << "      \"run_name\": " << JsonString(name) << ",\n"
        << "      \"run_type\": \"iteration\",\n"
        << "      \"repetitions\": " << repetitions[name] << ",\n"
        << "      \"repetition_index\": " << seen[name]++ << ",\n"
        << "      \"threads\": 1,\n"
        << "      \"label\": " << JsonString(res.resolved_device()) << ",\n"
        << "      \"gpubench_run_id\": " << JsonString(r.run_id()) << ",\n";
    first = false;
    const double throughput = res.throughput_samples_per_s();
    if (r.state() != v1::RUN_STATE_SUCCEEDED || !(throughput > 0)) {
      out << "      \"error_occurred\": true,\n"
          << "      \"error_message\": "
          << JsonString(r.error().empty() ? EnumShortName(v1::RunState_descriptor(), r.state())
                                          : r.error())
          << "\n    }";
      continue;
    }
    const int64_t batch = r.config().batch_size() > 0 ? r.config().batch_size() : 1;
    const double time_us = 1e6 * static_cast<double>(batch) / throughput;
    out << "      \"iterations\": " << res.iterations() << ",\n"
        << "      \"real_time\": " << Number(time_us) << ",\n"
        << "      \"cpu_time\": " << Number(time_us) << ",\n"
        << "      \"time_unit\": \"us\",\n"
        << "      \"items_per_second\": " << Number(throughput) << ",\n"
        << "      \"p50_ms\": " << Number(res.latency().p50_ms()) << ",\n"
        << "      \"p95_ms\": " << Number(res.latency().p95_ms()) << ",\n"
        << "      \"p99_ms\": " << Number(res.latency().p99_ms()) << "\n    }";
  }
  out << (first ? "]\n}\n" : "\n  ]\n}\n");
}

}  // namespace gpubench::client
