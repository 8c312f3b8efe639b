// The analyses `show` prints after a job's runs: the speedup of a device
// sweep (report/speedup.h), as tables and as JSON.
#include "client/analyses.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/compare.h"
#include "client/json_writer.h"
#include "common/spec.h"
#include "common/workload_registry.h"
#include "report/facets.h"
#include "report/format.h"

namespace gpubench::client {
namespace {

// A row's run, as every analysis's JSON names it.
JsonWriter& RunKeys(const v1::Run& r, JsonWriter& json) {
  return json.Key("run_id").String(r.run_id()).Key("run_index").Int(r.index());
}

std::string Times(double x) { return absl::StrFormat("%.2f\u00d7", x); }

// A succeeded distributed run with its scaling efficiency (ddp; -1 without
// a one-rank run of the same config).
struct DistributedRow {
  const v1::Run* run;
  double efficiency = -1;
};

std::vector<DistributedRow> DistributedRows(const std::vector<v1::Run>& runs) {
  std::map<std::string, double> one_rank;  // config without world_size -> samples/s
  auto key = [](const v1::Run& r) {
    v1::RunConfig c = r.config();
    c.clear_world_size();
    return ConfigKey(c);
  };
  for (const v1::Run& r : runs) {
    if (IsWorkload(r.config().workload(), WorkloadId::kDdp) && r.state() == v1::RUN_STATE_SUCCEEDED &&
        r.config().world_size() <= 1) {
      one_rank[key(r)] = r.result().throughput_samples_per_s();
    }
  }
  std::vector<DistributedRow> rows;
  for (const v1::Run& r : runs) {
    if (!IsDistributedWorkload(r.config().workload()) || r.state() != v1::RUN_STATE_SUCCEEDED) {
      continue;
    }
    DistributedRow row{&r};
    auto base = one_rank.find(key(r));
    if (IsWorkload(r.config().workload(), WorkloadId::kDdp) && base != one_rank.end() && base->second > 0) {
      row.efficiency = r.result().throughput_samples_per_s() /
                       (std::max(1, r.config().world_size()) * base->second);
    }
    rows.push_back(row);
  }
  return rows;
}

// A collective over one rank: it moves no byte between devices.
bool OneRank(const v1::Run& r) { return r.config().world_size() <= 1; }

// Time per operation: the inverse of operations per second.
double MicrosPerOperation(const v1::RunResult& r) {
  return r.throughput_samples_per_s() > 0 ? 1e6 / r.throughput_samples_per_s() : 0;
}

}  // namespace

void PrintDistributed(const std::vector<v1::Run>& runs, Format format, std::ostream& out) {
  const std::vector<DistributedRow> rows = DistributedRows(runs);
  Table collective, ddp;
  bool one_rank_rows = false;
  collective.header = {"#", "op", "bytes", "ranks", "us/op", "algbw GB/s", "busbw GB/s",
                       "devices"};
  ddp.header = {"#", "config", "ranks", "samples/s", "95% CI", "scaling efficiency", "devices"};
  for (const DistributedRow& row : rows) {
    const v1::Run& r = *row.run;
    const v1::RunResult& res = r.result();
    const std::string devices = absl::StrJoin(res.rank_devices(), ",");
    if (IsWorkload(r.config().workload(), WorkloadId::kCollective)) {
      // One rank moves nothing: bytes over its near-empty call would read
      // as hundreds of TB/s.
      const bool one_rank = OneRank(r);
      one_rank_rows = one_rank_rows || one_rank;
      collective.rows.push_back(
          {absl::StrCat(r.index()),
           report::Short(v1::CollectiveOp_descriptor(), r.config().params().collective_op()),
           absl::StrCat(r.config().params().collective_bytes()),
           absl::StrCat(std::max(1, r.config().world_size())),
           absl::StrFormat("%.2f", MicrosPerOperation(res)),
           one_rank ? "-" : absl::StrFormat("%.2f", res.algorithm_bandwidth_gb_per_s()),
           one_rank ? "-" : absl::StrFormat("%.2f", res.bus_bandwidth_gb_per_s()), devices});
    } else {
      ddp.rows.push_back({absl::StrCat(r.index()), report::DescribeConfig(r.config()),
                          absl::StrCat(r.config().world_size()),
                          absl::StrFormat("%.1f", res.throughput_samples_per_s()),
                          report::ThroughputIntervalText(res, 1),
                          row.efficiency < 0 ? "-" : absl::StrFormat("%.1f%%", 100 * row.efficiency),
                          devices});
    }
  }
  if (!collective.rows.empty()) {
    out << "\ncollectives (rank 0's time per operation; algbw = bytes / time, busbw = algbw x "
           "the bus factor, as nccl-tests)\n";
    PrintTable(collective, format, out);
    if (one_rank_rows) {
      out << "one rank: nothing moved between devices, so no bandwidth (\"-\"); us/op is the "
             "cost of the call alone\n";
    }
  }
  if (!ddp.rows.empty()) {
    out << "\ndata-parallel training (samples/s of all ranks; efficiency T_K / (K * T_1))\n";
    PrintTable(ddp, format, out);
  }
}

void WriteDistributed(const std::vector<v1::Run>& runs, JsonWriter& json) {
  json.Array();
  for (const DistributedRow& row : DistributedRows(runs)) {
    const v1::Run& r = *row.run;
    const v1::RunResult& res = r.result();
    json.Object();
    RunKeys(r, json);
    json.Key("config").String(report::DescribeConfig(r.config()));
    json.Key("workload").String(r.config().workload());
    json.Key("world_size").Int(std::max(1, r.config().world_size()));
    json.Key("rank_devices").Array();
    for (const std::string& d : res.rank_devices()) json.String(d);
    json.End();
    if (IsWorkload(r.config().workload(), WorkloadId::kCollective)) {
      json.Key("collective_op")
          .String(report::Short(v1::CollectiveOp_descriptor(), r.config().params().collective_op()));
      json.Key("bytes").Int(r.config().params().collective_bytes());
      json.Key("time_us").Number(MicrosPerOperation(res));
      if (OneRank(r)) {
        json.Key("note").String("one rank: nothing moved");
      } else {
        json.Key("algorithm_bandwidth_gb_per_s").Number(res.algorithm_bandwidth_gb_per_s());
        json.Key("bus_bandwidth_gb_per_s").Number(res.bus_bandwidth_gb_per_s());
      }
    }
    json.Key("throughput_samples_per_s").Number(res.throughput_samples_per_s());
    json.Key("scaling_efficiency").Number(row.efficiency);
    json.End();
  }
  json.End();
}

void PrintDeviceSpeedups(const std::vector<report::DeviceSpeedup>& views, Format format,
                         std::ostream& out) {
  if (views.empty()) return;
  Table t;
  t.header = {"config", "device", "runs", "samples/s", "95% CI", "speedup", "speedup 95% CI",
              "verdict"};
  for (const report::DeviceSpeedup& v : views) {
    for (size_t i = 0; i < v.sides.size(); ++i) {
      const report::DeviceSide& s = v.sides[i];
      const v1::RunResult& r = s.run->result();
      const Comparison& c = s.vs_baseline;
      t.rows.push_back({i == 0 ? v.config : "", s.device, absl::StrCat(s.runs.size()),
                        absl::StrFormat("%.1f", r.throughput_samples_per_s()),
                        report::ThroughputIntervalText(r, 1),
                        i == 0 ? "1 (baseline)" : Times(s.speedup),
                        i == 0 ? "-" : Interval(s.speedup_low, s.speedup_high, 2),
                        i == 0 ? "-"
                               : absl::StrCat(VerdictName(c.verdict),
                                              c.why.empty() ? "" : ": " + c.why)});
    }
  }
  out << "\nspeedup by device, against the first device of each config (the verdict is "
         "compare's, over each device's runs of the config; the interval needs 2 runs a "
         "side)\n";
  PrintTable(t, format, out);
  for (const report::DeviceSpeedup& v : views) {
    if (v.categories.empty()) continue;
    Table c;
    c.header = {"category"};
    for (const auto& s : v.sides) c.header.push_back(s.device + " us/sample");
    for (size_t i = 1; i < v.sides.size(); ++i) {
      c.header.push_back("speedup " + v.sides[i].device);
    }
    for (const report::CategoryTimes& row : v.categories) {
      std::vector<std::string> cells = {row.category};
      for (double us : row.us_per_sample) {
        cells.push_back(us < 0 ? "-" : absl::StrFormat("%.2f", us));
      }
      for (size_t i = 1; i < row.us_per_sample.size(); ++i) {
        const double base = row.us_per_sample[0], here = row.us_per_sample[i];
        cells.push_back(base > 0 && here > 0 ? Times(base / here) : "-");
      }
      c.rows.push_back(std::move(cells));
    }
    out << "\n" << Printable(v.config) << ": self time per sample by operator category\n";
    PrintTable(c, format, out);
  }
}

void WriteDeviceSpeedups(const std::vector<report::DeviceSpeedup>& views, JsonWriter& json) {
  json.Array();
  for (const report::DeviceSpeedup& v : views) {
    json.Object().Key("config").String(v.config);
    json.Key("devices").Array();
    for (const report::DeviceSide& side : v.sides) {
      const v1::RunResult& r = side.run->result();
      json.Object();
      json.Key("device").String(side.device);
      RunKeys(*side.run, json);
      json.Key("throughput_samples_per_s").Number(r.throughput_samples_per_s());
      json.Key("throughput_ci_low").Number(r.throughput_ci_low());
      json.Key("throughput_ci_high").Number(r.throughput_ci_high());
      json.Key("speedup").Number(side.speedup);
      json.Key("speedup_ci_low").Number(side.speedup_low);
      json.Key("speedup_ci_high").Number(side.speedup_high);
      json.Key("runs").Number(static_cast<double>(side.runs.size()));
      json.Key("verdict").String(VerdictName(side.vs_baseline.verdict));
      json.Key("why").String(side.vs_baseline.why);
      json.End();
    }
    json.End();
    if (!v.categories.empty()) {
      json.Key("categories").Array();
      for (const report::CategoryTimes& row : v.categories) {
        json.Object().Key("category").String(row.category);
        json.Key("us_per_sample").Object();
        for (size_t i = 0; i < row.us_per_sample.size(); ++i) {
          if (row.us_per_sample[i] >= 0) json.Key(v.sides[i].device).Number(row.us_per_sample[i]);
        }
        json.End().End();
      }
      json.End();
    }
    json.End();
  }
  json.End();
}

void PrintRoofline(const std::vector<report::RooflinePoint>& points, Format format,
                   std::ostream& out) {
  if (points.empty()) return;
  Table t;
  t.header = {"#",    "config",    "device",     "achieved", "traffic GB/s",
              "FLOP/B", "peak",     "peak GB/s", "of roof",  "verdict"};
  for (const report::RooflinePoint& p : points) {
    const bool peaks = p.peak_flops_per_s > 0 && p.peak_bytes_per_s > 0;
    t.rows.push_back({absl::StrCat(p.run->index()), report::DescribeConfig(p.run->config()),
                      p.device, report::FlopRate(p.flops_per_s),
                      absl::StrFormat("%.1f", p.bytes_per_s / 1e9),
                      absl::StrFormat("%.1f", p.intensity),
                      p.peak_flops_per_s > 0 ? report::FlopRate(p.peak_flops_per_s) : "-",
                      p.peak_bytes_per_s > 0 ? absl::StrFormat("%.1f", p.peak_bytes_per_s / 1e9)
                                             : "-",
                      peaks && p.roof_share <= report::kBeyondPeak
                          ? absl::StrFormat("%.0f%%", 100 * p.roof_share)
                          : "-",
                      absl::StrCat(p.verdict.empty() ? "-" : p.verdict, ": ", p.why)});
  }
  out << "\nroofline (traffic estimated from the profiled window's allocations; peaks from this "
         "host's matmul and device-to-device copy runs)\n";
  PrintTable(t, format, out);
}

void WriteRoofline(const std::vector<report::RooflinePoint>& points, JsonWriter& json) {
  json.Array();
  for (const report::RooflinePoint& p : points) {
    json.Object();
    RunKeys(*p.run, json);
    json.Key("config").String(report::DescribeConfig(p.run->config()));
    json.Key("device").String(p.device);
    json.Key("flops_per_s").Number(p.flops_per_s);
    json.Key("bytes_per_s").Number(p.bytes_per_s);
    json.Key("intensity_flop_per_byte").Number(p.intensity);
    json.Key("peak_flops_per_s").Number(p.peak_flops_per_s);
    json.Key("peak_bytes_per_s").Number(p.peak_bytes_per_s);
    json.Key("roof_share").Number(p.roof_share);
    json.Key("verdict").String(p.verdict);
    json.Key("why").String(p.why);
    json.End();
  }
  json.End();
}

void PrintEnergy(const std::vector<report::EnergyCurve>& curves, Format format,
                 std::ostream& out) {
  for (const report::EnergyCurve& c : curves) {
    Table t;
    t.header = {"#", "power limit", "clocks", "samples/s", "95% CI", "samples/J", "power W",
                "on the curve"};
    for (const report::EnergyPoint& p : c.points) {
      const v1::RunResult& res = p.run->result();
      t.rows.push_back({absl::StrCat(p.run->index()),
                        p.power_limit_w > 0 ? absl::StrFormat("%g W", p.power_limit_w) : "-",
                        p.gpu_clocks.empty() ? "free" : p.gpu_clocks,
                        absl::StrFormat("%.1f", p.samples_per_s),
                        report::ThroughputIntervalText(res, 1),
                        absl::StrFormat("%.3f", p.samples_per_joule),
                        absl::StrFormat("%.0f", p.power_w), p.on_curve ? "yes" : "no"});
    }
    out << "\nenergy: " << Printable(c.config)
        << " (on the curve: no other setting gives as many samples/s and samples/J and more "
           "of one; one run a setting, so points closer than their intervals are not told "
           "apart)\n";
    PrintTable(t, format, out);
  }
}

void WriteEnergy(const std::vector<report::EnergyCurve>& curves, JsonWriter& json) {
  json.Array();
  for (const report::EnergyCurve& c : curves) {
    json.Object().Key("config").String(c.config).Key("points").Array();
    for (const report::EnergyPoint& p : c.points) {
      json.Object();
      RunKeys(*p.run, json);
      json.Key("power_limit_w").Number(p.power_limit_w);
      json.Key("gpu_clocks").String(p.gpu_clocks);
      json.Key("throughput_samples_per_s").Number(p.samples_per_s);
      json.Key("samples_per_joule").Number(p.samples_per_joule);
      json.Key("power_w").Number(p.power_w);
      json.Key("on_curve").Bool(p.on_curve);
      json.End();
    }
    json.End().End();
  }
  json.End();
}

}  // namespace gpubench::client
