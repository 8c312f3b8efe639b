// The wall clock as a protobuf Timestamp, with nanoseconds (protobuf 3.21's
// TimeUtil::GetCurrentTime() keeps whole seconds only, which breaks ordering).
#ifndef GPUBENCH_COMMON_CLOCK_H_
#define GPUBENCH_COMMON_CLOCK_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/timestamp.pb.h"
#include "google/protobuf/util/time_util.h"

namespace gpubench {

inline google::protobuf::Timestamp NowTimestamp() {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
      absl::ToUnixNanos(absl::Now()));
}

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_CLOCK_H_
