// gpubench explain RUN for a CPU run: where its profiled window's CPU time
// went, from its profile (the operators' self time by category, the top
// operators) and one sentence naming the biggest share. A CPU trace has no
// device stream for HTA's breakdown (explain_command.cc).
#include <ostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/json_writer.h"
#include "client/output.h"

namespace gpubench::client {
namespace {

constexpr char kNextBatch[] = "gpubench::next_batch";

double SelfUs(const v1::ProfileSummary& p) {
  double us = 0;
  for (const v1::CategoryShare& c : p.categories()) us += c.self_time_us();
  return us;
}

// "48% of the CPU operators' self time is convolution: CPU-bound; the top
// operator is aten::mkldnn_convolution", or the input pipeline's wait where
// that is the top operator.
std::string Sentence(const v1::ProfileSummary& p) {
  if (!p.top_operators().empty() && p.top_operators(0).name() == kNextBatch) {
    return absl::StrFormat(
        "%.0f%% of the CPU operators' self time is the wait for the next batch (%s): "
        "input-bound; try more --loader-threads or --prefetch-depth",
        100 * p.top_operators(0).share(), kNextBatch);
  }
  if (p.categories().empty()) return "no CPU operator in the profile: nothing to break down";
  const v1::CategoryShare& top = p.categories(0);  // by self time, descending
  return absl::StrFormat("%.0f%% of the CPU operators' self time is %s: CPU-bound; the top "
                         "operator is %s",
                         100 * top.share(), top.category(),
                         p.top_operators().empty() ? "-" : p.top_operators(0).name());
}

}  // namespace

Table OperatorTable(const google::protobuf::RepeatedPtrField<v1::OperatorStat>& operators,
                    const char* time_column, bool with_category) {
  Table t{{"operator", "calls", time_column, "mean us/call", "share"}, {}};
  if (with_category) t.header.push_back("category");
  for (const v1::OperatorStat& op : operators) {
    t.rows.push_back({op.name(), absl::StrCat(op.count()),
                      absl::StrFormat("%.0f", op.self_time_us()),
                      op.count() > 0 ? absl::StrFormat("%.2f", op.self_time_us() / op.count())
                                     : "-",
                      absl::StrFormat("%.1f%%", 100 * op.share())});
    if (with_category) t.rows.back().push_back(op.category());
  }
  return t;
}

int ExplainCpuRun(const Args& a, const v1::Run& run, std::ostream& out) {
  const v1::ProfileSummary& p = run.result().profile();
  const std::string sentence = Sentence(p);
  if (a.format == Format::kJson) {
    JsonWriter json(out);
    json.Object().Key("device_times").Bool(false);
    json.Key("steps").Int(run.result().profiled_iterations()).Key("self_us").Number(SelfUs(p));
    json.Key("categories").Array();
    for (const v1::CategoryShare& c : p.categories()) {
      json.Object().Key("category").String(c.category()).Key("self_us").Number(c.self_time_us());
      json.Key("share").Number(c.share()).End();
    }
    json.End().Key("top").Array();
    for (const v1::OperatorStat& op : p.top_operators()) {
      json.Object().Key("name").String(op.name()).Key("count").Int(op.count());
      json.Key("self_us").Number(op.self_time_us()).Key("share").Number(op.share());
      json.Key("category").String(op.category()).End();
    }
    json.End().Key("verdict").String(sentence).End();
    return kExitOk;
  }
  out << "CPU operators' self time over the profiled window: "
      << absl::StrFormat("%.0f", SelfUs(p)) << " us in " << run.result().profiled_iterations()
      << " steps, the threads' summed (the run's profile; a CPU run's trace has no device "
         "stream to break down)\n";
  Table categories{{"category", "self us", "share"}, {}};
  for (const v1::CategoryShare& c : p.categories()) {
    categories.rows.push_back({c.category(), absl::StrFormat("%.0f", c.self_time_us()),
                               absl::StrFormat("%.1f%%", 100 * c.share())});
  }
  PrintTable(categories, Format::kTable, out);
  out << "\n";
  PrintTable(OperatorTable(p.top_operators(), "self us", /*with_category=*/true), Format::kTable,
             out);
  out << "\n" << sentence << "\n";
  return kExitOk;
}

}  // namespace gpubench::client
