// The events of a Chrome trace (PyTorch's profiler, Kineto) that a
// breakdown of device time needs, read a chunk at a time: the JSON is never
// held whole, only one event's text at a time and a compact record of each
// event kept. Kept: events with a duration and a category (not "Trace")
// that ran on a device stream, carry a correlation id (a runtime call and
// the work it launched), or are a ProfilerStep. The rest (CPU operators,
// metadata, flows) are counted and dropped. Thread-compatible.
#ifndef GPUBENCH_REPORT_TRACE_EVENTS_H_
#define GPUBENCH_REPORT_TRACE_EVENTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace gpubench::report {

// 40 bytes: a trace of 256 MiB keeps about 2 million.
struct TraceEvent {
  double ts = 0;   // µs, as the file gives it
  double dur = 0;  // µs
  int64_t correlation = -1;  // args.correlation; -1: none
  int32_t name = 0;    // into TraceEvents::names
  int32_t cat = 0;     // into TraceEvents::names
  int32_t stream = -1;  // args.stream; -1: a host event
  int32_t index = 0;    // its place in traceEvents, from 0
};

struct TraceEvents {
  std::vector<TraceEvent> events;  // in the file's order
  std::vector<std::string> names;  // names and categories, each once
  int64_t seen = 0;                // every element of traceEvents
  int32_t Intern(std::string_view s);
  const std::string& Name(int32_t id) const { return names[id]; }

 private:
  std::map<std::string, int32_t, std::less<>> ids_;
};

// Feed the trace's bytes in any chunks, then Finish. InvalidArgument, naming
// the event's index, for text that is not JSON, a trace without
// traceEvents, or an event over max_event_bytes.
class TraceReader {
 public:
  explicit TraceReader(size_t max_event_bytes = size_t{1} << 20)
      : max_event_bytes_(max_event_bytes) {}
  absl::Status Feed(std::string_view chunk);
  absl::Status Finish();
  TraceEvents& events() { return out_; }

 private:
  absl::Status EndEvent();

  const size_t max_event_bytes_;
  TraceEvents out_;
  int depth_ = 0;
  bool in_string_ = false, escape_ = false;
  std::string key_;        // the last string at depth 1 (capped)
  bool in_events_ = false;  // inside the traceEvents array (depth 2)
  bool found_events_ = false;
  std::string event_;  // the text of the event being read
  bool capturing_ = false;
};

// The whole file (gzip not read: the daemon stores the JSON).
absl::Status ReadTraceFile(const std::string& path, TraceEvents* out);

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_TRACE_EVENTS_H_
