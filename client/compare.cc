#include "client/compare.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"

namespace gpubench::client {
namespace {

// Appends "prefix.field A vs B" for each field in which a and b differ,
// going into singular sub-messages.
void AppendDifferences(const google::protobuf::Message& a, const google::protobuf::Message& b,
                       const std::string& prefix, std::vector<std::string>* out) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor* type = a.GetDescriptor();
  const google::protobuf::Reflection* r = a.GetReflection();
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* f = type->field(i);
    const std::string name = prefix + f->name();
    if (!f->is_repeated() && f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      AppendDifferences(r->GetMessage(a, f), r->GetMessage(b, f), name + ".", out);
      continue;
    }
    google::protobuf::util::MessageDifferencer same;
    if (same.CompareWithFields(a, b, {f}, {f})) continue;
    if (f->is_repeated()) {
      out->push_back(name);
      continue;
    }
    std::string value_a, value_b;
    google::protobuf::TextFormat::PrintFieldValueToString(a, f, -1, &value_a);
    google::protobuf::TextFormat::PrintFieldValueToString(b, f, -1, &value_b);
    out->push_back(absl::StrCat(name, " ", value_a, " vs ", value_b));
  }
}

}  // namespace

std::string ConfigDifferences(const v1::RunConfig& a, const v1::RunConfig& b, bool work_only) {
  std::vector<std::string> differences;
  if (!work_only) {
    AppendDifferences(a, b, "", &differences);
    return absl::StrJoin(differences, ", ");
  }
  // What a run does: the work whose time per sample is the figure.
  auto work = [](const v1::RunConfig& c) {
    v1::RunConfig w;
    w.set_workload(c.workload());
    *w.mutable_params() = c.params();
    w.set_mode(c.mode());
    return w;
  };
  AppendDifferences(work(a), work(b), "", &differences);
  return absl::StrJoin(differences, ", ");
}

}  // namespace gpubench::client
