#include "client/gbench.h"

#include <map>

#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/json_writer.h"
#include "common/spec.h"
#include "common/version.h"
#include "report/facets.h"

namespace gpubench::client {
namespace {

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
  JsonWriter json(out);
  json.Object().Key("context").Object();
  json.Key("date").String(
      absl::FormatTime("%Y-%m-%dT%H:%M:%S%Ez", absl::Now(), absl::UTCTimeZone()));
  json.Key("host_name").String(host);
  json.Key("executable").String(executable);
  json.Key("library_build_type").String("release");
  json.Key("gpubench_version").String(kGpubenchVersion);
  json.End().Key("benchmarks").Array();
  for (const v1::Run& r : runs) {
    const std::string name = BenchmarkName(r);
    const v1::RunResult& res = r.result();
    json.Object();
    json.Key("name").String(name);
    json.Key("family_index").Int(family[name]);
    json.Key("per_family_instance_index").Int(0);
    json.Key("run_name").String(name);
    json.Key("run_type").String("iteration");
    json.Key("repetitions").Int(repetitions[name]);
    json.Key("repetition_index").Int(seen[name]++);
    json.Key("threads").Int(1);
    json.Key("label").String(res.resolved_device());
    json.Key("gpubench_run_id").String(r.run_id());
    const double throughput = res.throughput_samples_per_s();
    if (r.state() != v1::RUN_STATE_SUCCEEDED || !(throughput > 0)) {
      json.Key("error_occurred").Bool(true);
      json.Key("error_message")
          .String(r.error().empty() ? EnumShortName(v1::RunState_descriptor(), r.state())
                                    : r.error());
      json.End();
      continue;
    }
    const int64_t batch = r.config().batch_size() > 0 ? r.config().batch_size() : 1;
    const double time_us = 1e6 * static_cast<double>(batch) / throughput;
    json.Key("iterations").Int(res.iterations());
    json.Key("real_time").Number(time_us);
    json.Key("cpu_time").Number(time_us);
    json.Key("time_unit").String("us");
    json.Key("items_per_second").Number(throughput);
    json.Key("p50_ms").Number(res.latency().p50_ms());
    json.Key("p95_ms").Number(res.latency().p95_ms());
    json.Key("p99_ms").Number(res.latency().p99_ms());
    json.End();
  }
  json.End().End();
}

}  // namespace gpubench::client
