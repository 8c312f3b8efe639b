#include "report/trace_breakdown.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_format.h"
#include "common/stats.h"

namespace gpubench::report {
namespace {

// HTA's GPU side: work on a stream launched by a runtime call, and the
// device-wide syncs.
bool IsDevice(const TraceEvent& e, const TraceEvents& t) {
  if (e.stream >= 0 && e.correlation >= 0) return true;
  const std::string& name = t.Name(e.name);
  return name == "Event Sync" || name == "Context Sync";
}

// A host call that launched work (its correlation id), for the idle split
// and the launch delays.
struct HostCall {
  int64_t correlation;
  double ts, dur;
  int32_t name, index;
};

// HTA's reading, in place: times from the first event's start (exact:
// Kineto's µs since the epoch keep 0.25 µs steps, while an end computed
// from them afterwards keeps far finer ones, as HTA's aligned times do);
// with two ProfilerSteps or more, the last one's launches left out, and work
// whose launch is not in the trace.
void Read(TraceEvents* t) {
  std::vector<TraceEvent>& events = t->events;
  double first = std::numeric_limits<double>::infinity();
  for (const TraceEvent& e : events) first = std::min(first, e.ts);
  for (TraceEvent& e : events) e.ts -= first;
  std::set<int32_t> steps;
  double last_step = -std::numeric_limits<double>::infinity();
  for (const TraceEvent& e : events) {
    if (IsDevice(e, *t) || !absl::StrContains(t->Name(e.name), "ProfilerStep")) continue;
    steps.insert(e.name);
    last_step = std::max(last_step, e.ts);
  }
  if (steps.size() < 2) return;
  std::vector<int64_t> launched;
  for (const TraceEvent& e : events) {
    if (!IsDevice(e, *t) && e.ts < last_step) launched.push_back(e.correlation);
  }
  std::sort(launched.begin(), launched.end());
  events.erase(std::remove_if(events.begin(), events.end(),
                              [&](const TraceEvent& e) {
                                return IsDevice(e, *t) ? !std::binary_search(launched.begin(),
                                                                             launched.end(),
                                                                             e.correlation)
                                                       : e.ts >= last_step;
                              }),
               events.end());
}

// The host calls with a correlation id, by id; of several, the last in the
// file (HTA's join keeps the last).
std::vector<HostCall> HostCalls(const TraceEvents& t) {
  std::vector<HostCall> calls;
  for (const TraceEvent& e : t.events) {
    if (!IsDevice(e, t) && e.correlation >= 0) {
      calls.push_back({e.correlation, e.ts, e.dur, e.name, e.index});
    }
  }
  // By id, the last in the file first; then the first of each id kept.
  std::sort(calls.begin(), calls.end(), [](const HostCall& a, const HostCall& b) {
    return a.correlation != b.correlation ? a.correlation < b.correlation : a.index > b.index;
  });
  calls.erase(std::unique(calls.begin(), calls.end(),
                          [](const HostCall& a, const HostCall& b) {
                            return a.correlation == b.correlation;
                          }),
              calls.end());
  calls.shrink_to_fit();
  return calls;
}

const HostCall* CallOf(const std::vector<HostCall>& calls, int64_t correlation) {
  auto it = std::lower_bound(calls.begin(), calls.end(), correlation,
                             [](const HostCall& c, int64_t id) { return c.correlation < id; });
  return it != calls.end() && it->correlation == correlation ? &*it : nullptr;
}

// The union of spans met in order of start (touching spans merge, as in
// HTA's merge_kernel_intervals).
class Union {
 public:
  void Add(double start, double end) {
    if (!open_) {
      first_ = start_ = start;
      end_ = end;
      open_ = true;
      return;
    }
    if (start > end_) {
      busy_ += end_ - start_;
      start_ = start;
    }
    end_ = std::max(end_, end);
  }
  double Busy() const { return open_ ? busy_ + end_ - start_ : 0; }
  double Span() const { return open_ ? end_ - first_ : 0; }

 private:
  bool open_ = false;
  double first_ = 0, start_ = 0, end_ = 0, busy_ = 0;
};

bool IsIdleCategory(const std::string& cat) {
  static const std::set<std::string> cats = {"kernel", "Kernel", "gpu_memset", "Memset",
                                             "gpu_memcpy", "Memcpy", "mtia_ccp_events"};
  return cats.count(cat) > 0;
}

// A stream's gap before its next work: the host's when the launch began
// after the previous work ended, another kernel's when under 30 µs.
void AddGap(const TraceEvent& e, double prev_end, const HostCall* call, IdleSplit* split) {
  const double gap = e.ts - prev_end;
  if (call != nullptr && call->ts > prev_end) {
    split->host_wait_us += gap;
  } else if (gap < 30) {
    split->kernel_wait_us += gap;
  } else {
    split->other_us += gap;
  }
}

}  // namespace

std::string KernelType(const std::string& name) {
  const bool nccl_kernel =
      absl::StartsWith(name, "nccl") && name.find("Kernel", 4) != std::string::npos;
  if (nccl_kernel) return "communication";
  if (absl::StartsWith(name, "Memcpy") || absl::StartsWith(name, "Memset") ||
      absl::StartsWith(name, "dma")) {
    return "memory";
  }
  if (absl::StrContains(name, "Memcpy") || absl::StartsWith(name, "Memset") ||
      absl::StrContains(name, "Sync")) {
    return "other";
  }
  return "computation";
}

Breakdown BreakDown(TraceEvents trace, int top_n) {
  Breakdown b;
  b.seen = trace.seen;
  Read(&trace);
  const std::vector<HostCall> calls = HostCalls(trace);
  std::vector<TraceEvent>& events = trace.events;
  events.erase(std::remove_if(events.begin(), events.end(),
                              [](const TraceEvent& e) { return e.stream == -1; }),
               events.end());
  // In order of start, then of the file (no stable sort's buffer).
  std::sort(events.begin(), events.end(), [](const TraceEvent& x, const TraceEvent& y) {
    return x.ts != y.ts ? x.ts < y.ts : x.index < y.index;
  });
  Union all, compute, with_comm, with_memory, comm;
  std::map<int32_t, KernelRow> by_name;
  std::map<int32_t, std::pair<double, IdleSplit>> streams;  // its last end, its gaps
  std::map<int32_t, std::string> types;  // each name's kernel type
  std::vector<double> delays;
  for (const TraceEvent& e : events) {
    ++b.device_events;
    const double end = e.ts + e.dur;
    all.Add(e.ts, end);
    auto type = types.find(e.name);
    if (type == types.end()) type = types.emplace(e.name, KernelType(trace.Name(e.name))).first;
    const std::string& kind = type->second;
    if (kind == "computation") compute.Add(e.ts, end);
    if (kind == "computation" || kind == "communication") with_comm.Add(e.ts, end);
    if (kind != "other") with_memory.Add(e.ts, end);
    if (kind == "communication") comm.Add(e.ts, end);
    KernelRow& row = by_name[e.name];
    ++row.count;
    row.total_us += e.dur;
    const std::string& cat = trace.Name(e.cat);
    const HostCall* call = CallOf(calls, e.correlation);
    if (IsIdleCategory(cat)) {
      auto [it, first] = streams.try_emplace(e.stream);
      if (first) {
        it->second.second.stream = e.stream;
      } else {
        AddGap(e, it->second.first, call, &it->second.second);
      }
      it->second.first = end;
    }
    if (cat == "kernel" || cat == "Kernel") {
      ++b.kernels;
      if (e.dur < 10) ++b.short_kernels;
    }
    if (call == nullptr) continue;
    const std::string& launch = trace.Name(call->name);
    if (launch == "cudaGraphLaunch") ++b.graph_launched;
    if (launch == "cudaLaunchKernel" || launch == "cudaLaunchKernelExC" ||
        launch == "cudaMemcpyAsync" || launch == "cudaMemsetAsync") {
      ++b.launches;
      delays.push_back(std::max(0.0, e.ts - (call->ts + call->dur)));
    }
  }
  if (b.device_events == 0) return b;
  b.span_us = all.Span();
  b.idle_us = b.span_us - all.Busy();
  b.compute_us = compute.Busy();
  b.non_compute_us = b.span_us - b.compute_us - b.idle_us;
  b.communication_us = with_comm.Busy() - b.compute_us;
  b.memory_us = with_memory.Busy() - with_comm.Busy();
  b.other_us = b.non_compute_us - b.communication_us - b.memory_us;
  b.communication_total_us = comm.Busy();
  // Never below 0 from the sums' rounding.
  b.communication_overlap_us =
      std::max(0.0, b.communication_total_us + b.compute_us - with_comm.Busy());
  for (auto& [stream, last] : streams) b.idle.push_back(last.second);
  b.median_launch_delay_us = stats::Median(std::move(delays));
  for (auto& [id, row] : by_name) {
    row.name = trace.Name(id);
    b.top.push_back(row);
  }
  std::stable_sort(b.top.begin(), b.top.end(),
                   [](const KernelRow& x, const KernelRow& y) { return x.total_us > y.total_us; });
  if (b.top.size() > static_cast<size_t>(top_n)) b.top.resize(top_n);
  return b;
}

std::string ShortKernelName(const std::string& name, size_t width) {
  std::string s = absl::StrReplaceAll(
      absl::StartsWith(name, "void ") ? name.substr(5) : name,
      {{"(anonymous namespace)::", ""}, {"at::native::", ""}});
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    // An argument list follows a name; "Memcpy HtoD (Pageable -> Device)"
    // keeps its words.
    if (s[i] == '(' && depth == 0 && i > 0 && s[i - 1] != ' ' && s.back() == ')') {
      s.resize(i);
      break;
    }
  }
  if (s.size() > width && width > 3) s = s.substr(0, width - 3) + "...";
  return s;
}

std::string BiggestShare(const Breakdown& b) {
  if (b.span_us <= 0) return "no device work in the trace: nothing to break down";
  double host = 0, kernel = 0, other = 0;
  for (const IdleSplit& s : b.idle) {
    host += s.host_wait_us;
    kernel += s.kernel_wait_us;
    other += s.other_us;
  }
  const double gaps = host + kernel + other;
  // The span's idle time shared out as the streams' gaps are.
  const auto idle_part = [&](double x) { return gaps > 0 ? b.idle_us * x / gaps : 0; };
  struct Share {
    double us;
    std::string what;
  };
  std::vector<Share> shares = {
      {idle_part(host), "idle waiting on the host: launch-bound; try --execution cuda_graph"},
      {idle_part(kernel),
       absl::StrFormat("idle in gaps under 30 us between kernels (%d of %d kernels under 10 us): "
                       "launch-bound; try --execution cuda_graph or a larger batch",
                       b.short_kernels, b.kernels)},
      {idle_part(other) + (gaps > 0 ? 0 : b.idle_us),
       "idle for other reasons (gaps of 30 us or more not caused by a late launch: "
       "synchronisation, the host's input)"},
      {b.compute_us, "compute: GPU-bound; the top kernel is " +
                         (b.top.empty() ? std::string("-") : ShortKernelName(b.top[0].name))},
      {b.communication_us, "communication not under compute"},
      {b.memory_us, "memory copies and sets"},
      {b.other_us, "other device work (syncs)"},
  };
  const Share* top = &shares[0];
  for (const Share& s : shares) {
    if (s.us > top->us) top = &s;
  }
  return absl::StrFormat("%.0f%% of the span is %s", b.Pct(top->us), top->what);
}

// Ranks whose time in communication is this close (a share of their span)
// arrive together.
constexpr double kEvenRanks = 0.02;

namespace {

// The rank that spends least in communication (without any, the one that
// works most), and the one that spends most there other than it.
std::pair<size_t, size_t> LateAndWaiting(const std::vector<RankBreakdown>& ranks) {
  size_t late = 0;
  for (size_t i = 1; i < ranks.size(); ++i) {
    const Breakdown &b = ranks[i].b, &s = ranks[late].b;
    if (b.communication_total_us < s.communication_total_us ||
        (b.communication_total_us == s.communication_total_us && b.WorkUs() > s.WorkUs())) {
      late = i;
    }
  }
  size_t waits = late == 0 ? 1 : 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i != late && ranks[i].b.communication_total_us > ranks[waits].b.communication_total_us) {
      waits = i;
    }
  }
  return {late, waits};
}

// Whether the ranks' times in communication are within kEvenRanks of the
// span of each other.
bool Even(const Breakdown& late, const Breakdown& waits) {
  return waits.communication_total_us - late.communication_total_us <=
         kEvenRanks * std::max(late.span_us, waits.span_us);
}

}  // namespace

size_t SlowestRank(const std::vector<RankBreakdown>& ranks) {
  if (ranks.size() < 2) return ranks.size();
  const auto [late, waits] = LateAndWaiting(ranks);
  return Even(ranks[late].b, ranks[waits].b) ? ranks.size() : late;
}

std::string DescribeSlowest(const std::vector<RankBreakdown>& ranks) {
  if (ranks.size() < 2) return "";
  const auto [late, waits] = LateAndWaiting(ranks);
  const RankBreakdown& s = ranks[late];
  const RankBreakdown& w = ranks[waits];
  if (Even(s.b, w.b)) {
    return absl::StrFormat(
        "the ranks arrive together: %.0f to %.0f us in communication, under %.0f%% of the span "
        "apart; none holds the others up",
        s.b.communication_total_us, w.b.communication_total_us, 100 * kEvenRanks);
  }
  // What it spends more on than the waiting rank, where that is at least
  // half of what the other waits more.
  const double gap = w.b.communication_total_us - s.b.communication_total_us;
  const double more_work = s.b.WorkUs() - w.b.WorkUs(), more_idle = s.b.idle_us - w.b.idle_us;
  std::string why =
      "its work and idle time are close to theirs: it reaches each collective later in the step";
  if (more_work >= gap / 2 && more_work >= more_idle) {
    why = "its device has more to do";
  } else if (more_idle >= gap / 2) {
    why = absl::StrCat("its device waits more, for its host (try explain --rank ", s.rank, ")");
  }
  return absl::StrFormat(
      "rank %d is the slowest: the others wait for it in communication (%.0f us there against "
      "%.0f on rank %d); it works %.0f us and idles %.0f against %.0f and %.0f on rank %d: %s",
      s.rank, s.b.communication_total_us, w.b.communication_total_us, w.rank, s.b.WorkUs(),
      s.b.idle_us, w.b.WorkUs(), w.b.idle_us, w.rank, why);
}

}  // namespace gpubench::report
