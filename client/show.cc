// `gpubench show`'s output: a job's runs as a table (or CSV, JSON,
// Markdown), with the analyses they support.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/analyses.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/gbench.h"
#include "client/repro.h"
#include "client/run_columns.h"
#include "report/figures.h"
#include "common/fingerprint.h"
#include "common/spec.h"
#include "common/spec_schema.h"
#include "report/language_model_table.h"
#include "report/serve_table.h"

namespace gpubench::client {
namespace {

// Kernel names carry whole template signatures; tables show the name and
// elide the arguments: "at::native::batch_norm_kernel<…>(…)".
std::string ShortOperatorName(std::string name) {
  if (name.rfind("void ", 0) == 0) name = name.substr(5);
  if (name.size() <= 80) return name;
  const size_t cut = name.find_first_of("<(");
  if (cut != std::string::npos && cut > 0 && cut < 76) {
    return name.substr(0, cut) + (name[cut] == '<' ? "<…>(…)" : "(…)");
  }
  return name.substr(0, 77) + "...";
}

}  // namespace

namespace {

// CSV is data: numbers alone, units in the column names, empty where there
// is no figure; pandas.read_csv takes it as it is.
Table RunsData(const std::vector<v1::Run>& runs, bool with_job_column) {
  Table t;
  if (with_job_column) t.header.push_back("job_id");
  for (const Cell& c : RunColumns(v1::Run())) t.header.push_back(c.name);
  for (const v1::Run& r : runs) {
    std::vector<std::string> row;
    if (with_job_column) row.push_back(r.job_id());
    for (const Cell& c : RunColumns(r)) row.push_back(CsvText(c));
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace

// A run whose achieved FLOP/s beat this host's best measured matmul at its
// precision reports a FLOP count its work did not do (or a peak measured
// too small): said under the table, never left as a plain figure.
void PrintAboveTheRoof(const std::vector<v1::Run>& runs,
                       const std::map<std::string, report::DevicePeaks>& peaks,
                       std::ostream& out) {
  for (const v1::Run& r : runs) {
    const double achieved = r.result().achieved_tflops() * 1e12;
    if (!HasFigures(r) || achieved <= 0) continue;  // a matmul is at most its own peak
    const report::RunPeaks roof = report::PeaksForRun(peaks, r);
    if (roof.flops_per_s <= 0 || achieved <= roof.flops_per_s) continue;
    out << "  above the roof: run " << r.index() << "'s " << report::FlopRate(achieved)
        << " is more than this host's best measured "
        << Short(v1::Precision_descriptor(), r.config().precision()) << " matmul ("
        << report::FlopRate(roof.flops_per_s)
        << "): its FLOP count, or that peak, is wrong; do not read it as achieved\n";
  }
}

// The math each run's precision ran in, as the runs recorded it: one line
// per mode with its runs' indexes.
void PrintMathModes(const std::vector<v1::Run>& runs, std::ostream& out) {
  std::vector<std::pair<std::string, std::vector<std::string>>> modes;
  for (const v1::Run& r : runs) {
    const std::string& mode = r.result().math_mode();
    if (mode.empty()) continue;
    auto it = std::find_if(modes.begin(), modes.end(), [&](const auto& m) { return m.first == mode; });
    if (it == modes.end()) it = modes.insert(modes.end(), {mode, {}});
    it->second.push_back(absl::StrCat(r.index()));
  }
  for (const auto& [mode, indexes] : modes) {
    out << "  math: " << mode << " (run" << (indexes.size() > 1 ? "s " : " ")
        << absl::StrJoin(indexes, ", ") << ")\n";
  }
}

// How many intra-op threads the CPU runs had and why, with their BLAS: one
// line per setting with its runs' indexes ("cpu: OpenBLAS (openblas-openmp);
// threads 2: the CPUs this worker may use (affinity 2, no cgroup quota),
// less 0 loader threads (runs 0, 1)"). Runs from before the reason was
// recorded give the count alone.
void PrintCpuThreads(const std::vector<v1::Run>& runs, std::ostream& out) {
  std::vector<std::pair<std::string, std::vector<std::string>>> settings;
  for (const v1::Run& r : runs) {
    const v1::RunResult& res = r.result();
    if (res.resolved_device() != "cpu" || res.cpu_threads() <= 0) continue;
    const std::string setting = absl::StrCat(
        res.cpu_blas().empty() ? "" : res.cpu_blas() + "; ", "threads ",
        res.cpu_threads_reason().empty() ? absl::StrCat(res.cpu_threads())
                                         : res.cpu_threads_reason());
    auto it = std::find_if(settings.begin(), settings.end(),
                           [&](const auto& s) { return s.first == setting; });
    if (it == settings.end()) it = settings.insert(settings.end(), {setting, {}});
    it->second.push_back(absl::StrCat(r.index()));
  }
  for (const auto& [setting, indexes] : settings) {
    out << "  cpu: " << Printable(setting) << " (run" << (indexes.size() > 1 ? "s " : " ")
        << absl::StrJoin(indexes, ", ") << ")\n";
  }
}

// What each warning in the table's notes means, those that appear only.
void PrintWarningLegend(const std::vector<v1::Run>& runs, std::ostream& out) {
  std::set<std::string> seen;
  for (const v1::Run& r : runs) {
    for (const std::string& w : RunWarnings(r)) {
      if (seen.insert(w).second) out << "  " << w << ": " << WarningMeaning(w) << "\n";
    }
  }
}

Table RunsTable(const std::vector<v1::Run>& runs, bool with_job_column, Format format) {
  if (format == Format::kCsv) return RunsData(runs, with_job_column);
  // The figures a text table shows, by report/figures.h's names; the
  // interval and the loss are shown as one column each.
  const std::vector<const report::Figure*> figures = [] {
    std::vector<const report::Figure*> f;
    for (const char* name : {"throughput_samples_per_s", "throughput_ci_low", "p50_ms", "p95_ms",
                             "p99_ms", "data_wait_share", "gpu_utilization_pct",
                             "peak_allocated_bytes", "peak_rss_bytes", "loss_first"}) {
      f.push_back(&report::FigureNamed(name));
    }
    return f;
  }();
  Table t;
  if (with_job_column) t.header.push_back("job");
  for (const char* h : {"#", "run", "config", "device", "state"}) t.header.push_back(h);
  for (const report::Figure* f : figures) {
    const std::string name = f->name;
    t.header.push_back(name == "throughput_ci_low" ? "95% CI" : name == "loss_first" ? "loss"
                                                                                    : f->heading);
  }
  t.header.push_back("notes");
  for (const v1::Run& r : runs) {
    const auto& res = r.result();
    std::vector<std::string> row;
    if (with_job_column) row.push_back(r.job_id());
    row.push_back(absl::StrCat(r.index()));
    row.push_back(r.run_id().empty() ? "-" : r.run_id());  // what compare and trace take
    row.push_back(DescribeConfig(r.config()));
    row.push_back(res.resolved_device().empty() ? "-" : res.resolved_device());
    row.push_back(Short(v1::RunState_descriptor(), r.state()));
    for (const report::Figure* f : figures) {
      const std::string name = f->name;
      if (name == "throughput_ci_low") {
        // The interval, or why there is none.
        row.push_back(HasFigures(r) ? report::ThroughputIntervalText(res, 1) : "-");
      } else if (name == "loss_first") {
        const std::string last = FigureText(report::FigureNamed("loss_last"), r);
        row.push_back(last == "-" ? "-"
                                  : absl::StrFormat("%.4g>%.4g", res.first_loss(),
                                                    res.last_loss()));
      } else {
        row.push_back(FigureText(*f, r));
      }
    }
    const std::string notes = RunNotes(r);
    row.push_back(notes.empty() ? "-" : notes);
    t.rows.push_back(std::move(row));
  }
  return t;
}

// Words joined by ", ", broken into lines of at most 100 columns, each
// line after the first indented by two spaces.
std::string Wrapped(const std::string& head, const std::vector<std::string>& words) {
  std::string text = head, line = head;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string word = words[i] + (i + 1 < words.size() ? "," : "");
    if (line.size() + 1 + word.size() > 100 && line.size() > 2) {
      text += "\n  ";
      line = "  ";
    } else if (i > 0 || !head.empty()) {
      text += " ";
      line += " ";
    }
    text += word;
    line += word;
  }
  return text + "\n";
}

// The first fingerprinted run's environment, then what differs from it in
// each later run.
void PrintEnvironment(const std::vector<v1::Run>& runs, std::ostream& out) {
  const v1::Run* first = nullptr;
  for (const v1::Run& r : runs) {
    if (r.fingerprint().ByteSizeLong() == 0) continue;
    if (first == nullptr) {
      first = &r;
      std::vector<std::string> fields;
      for (const auto& [label, value] : FingerprintFields(r.fingerprint())) {
        fields.push_back(absl::StrCat(label, " ", Printable(value)));
      }
      out << "\n" << Wrapped(absl::StrCat("environment (run ", r.index(), "):"), fields);
      continue;
    }
    const std::vector<std::string> changes =
        FingerprintChanges(first->fingerprint(), r.fingerprint());
    std::vector<std::string> printable;
    for (const std::string& c : changes) printable.push_back(Printable(c));
    if (!changes.empty()) out << Wrapped(absl::StrCat("  run ", r.index(), ":"), printable);
  }
}

// The language models' tables, each under its legend where it has rows:
// fixed-batch figures, serving, serving's time slices.
void PrintLanguageModelTables(const std::vector<const v1::Run*>& runs,
                              const std::map<std::string, report::DevicePeaks>& peaks,
                              Format format, std::ostream& out) {
  const std::pair<report::LanguageModelTable, std::string> tables[] = {
      {report::LanguageModelFigures(runs, peaks),
       absl::StrCat("language models (", report::kLanguageModelLegend, ")")},
      {report::ServingFigures(runs), absl::StrCat("serving (", report::kServingLegend, ")")},
      {report::ServingSlices(runs),
       absl::StrCat("serving over time (", report::kSlicesLegend, ")")},
  };
  for (const auto& [table, title] : tables) {
    if (table.rows.empty()) continue;
    out << "\n" << title << "\n";
    PrintTable(Table{table.header, table.rows}, format, out);
  }
}

// Each profiled run's top operators and its time by category.
void PrintProfiles(const std::vector<v1::Run>& runs, std::ostream& out) {
  for (const v1::Run& r : runs) {
    const v1::ProfileSummary& p = r.result().profile();
    if (p.top_operators().empty()) continue;
    out << "\nrun " << r.index() << " profile (" << (p.device_times() ? "device" : "CPU")
        << " self time; trace: gpubench trace " << r.run_id() << " -o trace.json)\n";
    auto table = [&](const char* what, const auto& rows) {
      Table ops;
      ops.header = {what, "calls", p.device_times() ? "device ms" : "self ms", "share",
                    "category"};
      for (const auto& op : rows) {
        ops.rows.push_back({ShortOperatorName(op.name()), absl::StrCat(op.count()),
                            absl::StrFormat("%.3f", op.self_time_us() / 1e3),
                            absl::StrFormat("%.1f%%", 100 * op.share()), op.category()});
      }
      PrintTable(ops, Format::kTable, out);
    };
    table(p.device_times() ? "kernel" : "operator", p.top_operators());
    if (!p.device_operators().empty()) {
      out << "device time by the operator that launched it\n";
      table("operator", p.device_operators());
    }
    std::vector<std::string> parts;
    for (const auto& c : p.categories()) {
      parts.push_back(absl::StrFormat("%s %.1f%%", c.category(), 100 * c.share()));
    }
    out << "by category: " << absl::StrJoin(parts, ", ") << "\n";
  }
}

void PrintJob(const v1::Job& job, const std::vector<v1::Run>& runs, Format format,
              std::ostream& out, const std::vector<v1::Run>& peak_runs) {
  if (format == Format::kGbench) {
    PrintGbench(runs, "gpubench show " + job.job_id(), out);
    return;
  }
  const std::vector<const v1::Run*> pointers = report::RunPointers(runs);
  const auto speedups = report::DeviceSpeedups(pointers, job.spec().profiling().iterations());
  const auto peaks = report::PeaksOf(pointers, peak_runs);
  const auto roofline = report::Roofline(pointers, peaks);
  const auto energy = report::EnergyCurves(pointers);
  if (format == Format::kJson) {
    JsonWriter json(out);
    json.Object().Key("job").Message(job).Key("runs").Array();
    for (v1::Run r : runs) {
      r.clear_samples();
      r.clear_telemetry_series();
      json.Message(r);
    }
    json.End();
    WriteDeviceSpeedups(speedups, json.Key("device_speedups"));
    WriteRoofline(roofline, json.Key("roofline"));
    WriteDistributed(runs, json.Key("distributed"));
    WriteEnergy(energy, json.Key("energy"));
    json.End();
    return;
  }
  if (format == Format::kSpec) {
    out << MessageToJson(job.spec()) << "\n";
    return;
  }
  if (format == Format::kTable) {
    // A job stored before its plan held these ran with the same defaults.
    v1::JobSpec settings = job.spec();
    FillSpecDefaults(&settings);
    out << "job " << job.job_id() << "  " << Printable(job.spec().name()) << "  state "
        << Short(v1::JobState_descriptor(), job.state()) << "\n"
        << "settings: " << SettingsText(settings) << "\n"
        << "reproduce: " << Printable(ReproCommand(job.job_id(), job.spec())) << "\n";
  }
  PrintTable(RunsTable(runs, false, format), format, out);
  if (format == Format::kTable || format == Format::kMarkdown) {
    PrintWarningLegend(runs, out);
    PrintAboveTheRoof(runs, peaks, out);
    PrintMathModes(runs, out);
    PrintCpuThreads(runs, out);
    PrintLanguageModelTables(pointers, peaks, format, out);
    PrintDeviceSpeedups(speedups, format, out);
    PrintRoofline(roofline, format, out);
    PrintDistributed(runs, format, out);
    PrintEnergy(energy, format, out);
    PrintEnvironment(runs, out);
  }
  if (format == Format::kTable) PrintProfiles(runs, out);
  const std::set<std::string> oom = report::OutOfMemoryConfigs(report::RunPointers(runs));
  if (format == Format::kTable) {
    for (const auto& [key, batch] : job.max_batch_size_fits()) {
      if (oom.count(key) == 0) continue;
      auto config = ParseConfigKey(key);
      if (!config.ok()) continue;
      config->set_batch_size(batch);
      out << "largest batch that fit: " << DescribeConfig(*config) << "\n";
    }
  }
}

}  // namespace gpubench::client
