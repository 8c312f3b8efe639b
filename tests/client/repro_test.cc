// The "reproduce:" line's flags (client/repro.h): each field of the schema
// written as its flag applies back to the same spec, sweep axes, ranges and
// groups included; a spec's flags plan what it plans, for every workload;
// what flags cannot say (a serving trace) goes through the spec file.
#include "client/repro.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "client/spec_flags.h"
#include "common/spec.h"
#include "common/spec_schema.h"
#include "common/workload_registry.h"
#include "google/protobuf/util/message_differencer.h"

namespace gpubench::client {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::util::MessageDifferencer;

v1::JobSpec Applied(const std::vector<SpecFlag>& flags) {
  v1::JobSpec spec;
  const auto s =
      ApplySpecFlags(std::map<std::string, std::string>(flags.begin(), flags.end()), &spec);
  EXPECT_TRUE(s.ok()) << s;
  return spec;
}

// A value of f's within its bounds that is not its zero.
std::string SomeValue(const SchemaField& f) {
  const FieldDescriptor* d = f.field();
  switch (d->cpp_type()) {
    case FieldDescriptor::CPPTYPE_BOOL:
      return "on";
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto* type = d->enum_type();
      return EnumShortName(type, type->value(type->value_count() - 1)->number());
    }
    case FieldDescriptor::CPPTYPE_STRING:
      return "x";
    default:
      // Above 0 and within the bounds; a double's not a whole number
      // where they leave room.
      const double low = f.schema->min() > 0 ? f.schema->min() : 1;
      const bool whole = d->cpp_type() != FieldDescriptor::CPPTYPE_DOUBLE &&
                         d->cpp_type() != FieldDescriptor::CPPTYPE_FLOAT;
      double v = whole ? low : low + 0.25;
      if (f.schema->max() > 0 && v > f.schema->max()) v = f.schema->max();
      return BoundText(d, v);
  }
}

// Each field with a flag (or a group's), set alone, comes back from its
// flags as it was: the value's text, its type, its presence.
TEST(Repro, EachFieldsFlagAppliesBackToTheSameSpec) {
  int checked = 0;
  for (const SchemaField& f : SpecSchema()) {
    if (f.schema->flag().empty() && f.schema->flag_group().empty()) continue;
    if (f.field()->message_type() != nullptr) continue;  // a trace: a file
    v1::JobSpec spec;
    const std::string value = SomeValue(f);
    ASSERT_TRUE(SetFromText(f, value, /*to_sweep=*/false, &spec).ok()) << f.path << " " << value;
    const std::vector<SpecFlag> flags = FlagsOf(spec);
    // A setting at its default has no flag: both read as the default.
    v1::JobSpec back = Applied(flags);
    FillSpecDefaults(&spec);
    FillSpecDefaults(&back);
    std::string difference;
    MessageDifferencer differ;
    differ.ReportDifferencesToString(&difference);
    EXPECT_TRUE(differ.Compare(spec, back))
        << f.path << " = " << value << " as "
        << (flags.empty() ? "no flag" : "--" + flags[0].first + " " + flags[0].second) << ": "
        << difference;
    ++checked;
  }
  EXPECT_GT(checked, 60);
}

// Sweep axes as comma lists, a range as MIN:MAX, a group as NAME=VALUE
// pairs; the flags plan the same runs.
TEST(Repro, SweepsRangesAndGroupsComeBackAsTheirFlags) {
  const v1::JobSpec spec = Applied({{"workload", "gpt"}, {"mode", "serve"}, {"batch", "4,8"},
                                    {"precision", "bf16,fp32"}, {"input-len", "32:64"},
                                    {"output-len", "16"}, {"slo", "tpot_ms=20,ttft_ms=200"},
                                    {"request-rate", "2.5"}, {"min-time-ms", "250"}});
  auto flags = SpecFlagsFor(spec);
  ASSERT_TRUE(flags.ok()) << flags.status();
  const std::map<std::string, std::string> named(flags->begin(), flags->end());
  EXPECT_EQ(named.at("batch"), "4,8");
  EXPECT_EQ(named.at("precision"), "bf16,fp32");
  EXPECT_EQ(named.at("input-len"), "32:64");
  EXPECT_EQ(named.at("slo"), "ttft_ms=200,tpot_ms=20");
  EXPECT_EQ(named.at("request-rate"), "2.5");
  EXPECT_EQ(named.at("min-time-ms"), "250");
  EXPECT_EQ(ReproCommand("j1", spec).rfind("gpubench submit --workload gpt", 0), 0u)
      << ReproCommand("j1", spec);
}

// Every workload's spec, as the CLI makes it from its name and a setting,
// is planned the same from its flags (a workload that needs more to plan,
// a model file, is left out); one that sets what no flag says (a seed,
// given in a spec file) is not.
TEST(Repro, EveryWorkloadsFlagsPlanItsRuns) {
  int planned = 0;
  for (const WorkloadInfo* w : Workloads()) {
    v1::JobSpec spec = Applied({{"workload", std::string(w->name)}, {"min-time-ms", "250"}});
    if (!ExpandSweep(spec).ok()) continue;
    ++planned;
    auto flags = SpecFlagsFor(spec);
    EXPECT_TRUE(flags.ok()) << w->name << ": " << flags.status();
    spec.mutable_measurement()->set_seed(7);
    EXPECT_FALSE(SpecFlagsFor(spec).ok()) << w->name << ": the seed has no flag";
  }
  EXPECT_GE(planned, static_cast<int>(Workloads().size()) - 2);
}

// A serving trace has no flag's text: the line goes through the job's spec
// file, which plans the same runs.
TEST(Repro, ATraceGoesThroughTheSpecFile) {
  v1::JobSpec spec = Applied({{"workload", "gpt"}, {"mode", "serve"}});
  v1::TraceRequest* t = spec.mutable_base()->mutable_serve()->add_trace();
  t->set_arrival_ms(0);
  t->set_input_tokens(8);
  t->set_output_tokens(4);
  auto flags = SpecFlagsFor(spec);
  ASSERT_FALSE(flags.ok());
  EXPECT_NE(flags.status().message().find("trace"), std::string::npos) << flags.status();
  EXPECT_EQ(ReproCommand("j1", spec).rfind(
                "gpubench show j1 --output spec > j1.json && gpubench submit j1.json  # "
                "base.serve.trace has no flag",
                0),
            0u)
      << ReproCommand("j1", spec);
  auto back = ParseJobSpecJson(MessageToJson(spec));
  ASSERT_TRUE(back.ok()) << back.status();
  auto runs = ExpandSweep(spec), runs_back = ExpandSweep(*back);
  ASSERT_TRUE(runs.ok() && runs_back.ok());
  ASSERT_EQ(runs->size(), runs_back->size());
  EXPECT_TRUE(MessageDifferencer::Equals((*runs)[0], (*runs_back)[0]));
}

// A value a shell would split or expand is quoted.
TEST(Repro, AValueAShellWouldSplitIsQuoted) {
  const v1::JobSpec spec = Applied({{"workload", "mlp"}, {"name", "nightly mlp's run"}});
  const std::string line = ReproCommand("j1", spec);
  EXPECT_NE(line.find("--name 'nightly mlp'\\''s run'"), std::string::npos) << line;
}

}  // namespace
}  // namespace gpubench::client
