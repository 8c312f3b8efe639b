#include "common/filter.h"

#include <gtest/gtest.h>

#include <string>

namespace gpubench {
namespace {

using Kind = ConfigPredicate::Kind;

ConfigPredicate Parse(const std::string& text) {
  auto p = ParseConfigPredicate(text, "config_equals[0]");
  EXPECT_TRUE(p.ok()) << text << ": " << p.status();
  return p.ok() ? *p : ConfigPredicate{};
}

TEST(ConfigPredicate, TypedValuesFromTheFieldsOwnType) {
  ConfigPredicate batch = Parse("batch_size=32");
  EXPECT_EQ(batch.path, "batch_size");
  EXPECT_EQ(batch.kind, Kind::kInt);
  EXPECT_EQ(batch.int_value, 32);

  ConfigPredicate cl = Parse("channels_last=true");
  EXPECT_EQ(cl.kind, Kind::kBool);
  EXPECT_EQ(cl.int_value, 1);

  ConfigPredicate size = Parse("params.image_size=228");
  EXPECT_EQ(size.path, "params.image_size");
  EXPECT_EQ(size.int_value, 228);

  ConfigPredicate workload = Parse("workload=resnet50");
  EXPECT_EQ(workload.kind, Kind::kText);
  EXPECT_EQ(workload.text, "resnet50");
}

TEST(ConfigPredicate, EnumsTakeTheShortNamesTheCliPrintsOrTheFullOnes) {
  for (const char* text : {"precision=bf16", "precision=BF16", "precision=PRECISION_BF16"}) {
    ConfigPredicate p = Parse(text);
    EXPECT_EQ(p.kind, Kind::kEnum) << text;
    EXPECT_EQ(p.text, "PRECISION_BF16") << text;  // as the stored config JSON spells it
  }
}

TEST(ConfigPredicate, BadEntriesNameTheEntryAndWhatIsWrong) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"batch_size", "expected field=value"},
      {"=3", "expected field=value"},
      {"no_such_field=1", "has no field \"no_such_field\""},
      {"image_size=64", "has no field \"image_size\"; did you mean params.image_size?"},
      {"loader_threads=2", "did you mean pipeline.loader_threads?"},
      {"batch_size=many", "takes an integer"},
      {"channels_last=perhaps", "takes true or false"},
      {"precision=fp12", "expected one of"},
      {"batch_size.x=1", "not a message"},
      {"params=1", "not a single value"},
  };
  for (const Case& c : cases) {
    auto p = ParseConfigPredicate(c.text, "config_equals[3]");
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_EQ(p.status().message().rfind("config_equals[3]: ", 0), 0u) << p.status();
    EXPECT_NE(p.status().message().find(c.says), std::string::npos) << p.status();
  }
}

}  // namespace
}  // namespace gpubench
