// Typed conditions on a run's configuration, parsed from the "field=value"
// text users write ("batch_size=32", "precision=bf16",
// "params.model_size=small", "channels_last=true"). The store turns them
// into SQL; nothing downstream parses text again.
#ifndef GPUBENCH_COMMON_FILTER_H_
#define GPUBENCH_COMMON_FILTER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpubench {

// One RunConfig field equal to one value.
struct ConfigPredicate {
  enum class Kind {
    kInt,    // int32/uint32 fields: int_value
    kInt64,  // int64/uint64 fields: text (the JSON mapping writes them as strings)
    kReal,   // float/double: real_value
    kBool,   // int_value 0 or 1
    kEnum,   // text is the full value name ("PRECISION_BF16")
    kText,   // string fields: text
  };
  std::string path;  // protobuf field names joined with dots: "params.model_size"
  Kind kind = Kind::kText;
  int64_t int_value = 0;
  double real_value = 0;
  std::string text;
};

// Parses "field=value" against RunConfig's fields. Enum values take the
// short names the CLI prints ("bf16") or the full ones. InvalidArgument
// starting with `name` (e.g. "config_equals[0]") for text that is not
// field=value, a field RunConfig lacks, a message or repeated field, or a
// value of the wrong type.
absl::StatusOr<ConfigPredicate> ParseConfigPredicate(absl::string_view entry,
                                                     absl::string_view name);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_FILTER_H_
