// A strict RFC 8259 check of a JSON text, run before protobuf's JSON parser:
// that parser also takes JavaScript's forms (single-quoted strings, bare
// keys) and keeps the last of a key given twice. Thread-safe (no state).
#ifndef GPUBENCH_COMMON_STRICT_JSON_H_
#define GPUBENCH_COMMON_STRICT_JSON_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace gpubench {

// OK when json is one RFC 8259 value. InvalidArgument naming the field (its
// path from root, e.g. "spec.base.batch_size"), the line and the column for
// anything else: a key given twice in one object (in either spelling,
// "batch_size" or "batchSize"), nesting deeper than max_depth, single
// quotes, bare keys, comments, trailing commas, bad numbers or escapes, raw
// control characters, invalid UTF-8, text after the end.
absl::Status CheckStrictJson(std::string_view json, const std::string& root, int max_depth);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_STRICT_JSON_H_
