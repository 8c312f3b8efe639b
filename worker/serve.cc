#include "worker/serve.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <deque>
#include <thread>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "common/stats.h"

namespace gpubench::serve {
namespace {

// SplitMix64 (Steele, Lea and Flood): one generator a request, seeded by
// (seed, id), so a request's draws do not depend on how many came before.
class Generator {
 public:
  Generator(uint64_t seed, int64_t id) : state_(seed) {
    state_ = Next() ^ static_cast<uint64_t>(id);
    Next();
  }
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1): never 0, so that its logarithm is finite.
  double Uniform() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53; }
  // Standard normal (Box-Muller).
  double Normal() {
    const double r = std::sqrt(-2 * std::log(Uniform()));
    return r * std::cos(2 * M_PI * Uniform());
  }
  // Gamma of shape k and scale 1 (Marsaglia and Tsang; below 1 through
  // shape k + 1 times U^(1/k)).
  double Gamma(double k) {
    if (k < 1) return Gamma(k + 1) * std::pow(Uniform(), 1 / k);
    const double d = k - 1.0 / 3, c = 1 / std::sqrt(9 * d);
    while (true) {
      const double x = Normal(), v = std::pow(1 + c * x, 3);
      if (v <= 0) continue;
      const double u = Uniform();
      if (std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v;
    }
  }
  // Uniform in [lo, hi]; lo where hi is not above it.
  int Between(int lo, int hi) {
    if (hi <= lo) return lo;
    return lo + static_cast<int>(Uniform() * (static_cast<double>(hi) - lo + 1));
  }

 private:
  uint64_t state_;
};

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// One request as the run follows it.
struct Flight {
  Request request;
  int64_t arrival_ns = 0;  // absolute
  int64_t first_ns = 0, last_ns = 0, done_ns = -1;
  int prefilled = 0;   // prompt tokens in the cache
  int launched = 0;    // tokens launched: the prefill's and each step's
  int generated = 0;   // those on the host
  bool measured = false;
};

// The run's state and its steps; Serve drives it.
class Scheduler {
 public:
  Scheduler(const Load& load, Model* model, Timeline* clock,
            const std::function<void()>& on_measure_begin)
      : load_(load), model_(model), clock_(clock), on_measure_begin_(on_measure_begin),
        requests_(load), slot_of_(std::max(1, load.slots), -1) {}

  absl::StatusOr<Outcome> Run(const std::atomic<bool>* cancel);

 private:
  bool open() const { return load_.request_rate > 0 || !load_.trace.empty(); }
  bool Measured(int64_t id) const {
    return id >= load_.warmup_requests && id < load_.warmup_requests + load_.num_requests;
  }
  int InFlight() const { return sent_ - finished_; }
  void Arrive(Request r, int64_t arrival_ns);
  void Send(int index);
  void Finish(int index, int64_t now);
  absl::Status Admit();
  absl::StatusOr<bool> DecodeStep();
  absl::Status Observe();
  absl::Status Drain();
  Outcome Figures(int64_t end_ns) const;
  void LittlesLaw(int64_t first_arrival, int64_t last_arrival, int64_t end_ns,
                  Outcome* out) const;
  void Slices(int64_t from, int64_t to, Outcome* out) const;

  const Load load_;
  Model* const model_;
  Timeline* const clock_;
  const std::function<void()> on_measure_begin_;
  Requests requests_;
  int64_t start_ns_ = 0;
  int64_t measure_began_ns_ = 0;  // a closed loop's, once the hook has run
  std::vector<Flight> flights_;
  std::deque<int> held_;     // open loop: arrived over the concurrency limit
  std::deque<int> waiting_;  // sent, waiting for a slot
  std::deque<int> prefilling_;  // slots whose prompt is not yet all in the cache, oldest first
  std::vector<int> slot_of_;  // each slot's flight, -1 when free
  std::deque<std::vector<Model::Step>> launched_;  // steps not yet waited for, oldest first
  int sent_ = 0, finished_ = 0, measured_done_ = 0;
  // (time, first tokens) of each prefill, (time, prompt tokens) of each
  // chunk prefilled, (time, tokens: requests decoded) of each decode step.
  std::vector<std::pair<int64_t, int>> first_tokens_, prompts_, steps_;
  // (time, ms) of each gap between two tokens of a measured request.
  std::vector<std::pair<int64_t, double>> gaps_;
};

void Scheduler::Arrive(Request r, int64_t arrival_ns) {
  // Once every measured request has arrived, a later one that would wait
  // behind a full cache's worth adds no load before the run ends (the
  // queue is first in, first out, and never runs dry): it is not kept, so
  // an overloaded open loop does not grow without bound.
  if (r.id >= load_.warmup_requests + load_.num_requests &&
      waiting_.size() + held_.size() >= slot_of_.size()) {
    return;
  }
  Flight f;
  f.request = r;
  f.arrival_ns = arrival_ns;
  f.measured = Measured(r.id);
  flights_.push_back(f);
  const int index = static_cast<int>(flights_.size()) - 1;
  if (load_.concurrency > 0 && InFlight() >= load_.concurrency) {
    held_.push_back(index);
  } else {
    Send(index);
  }
}

void Scheduler::Send(int index) {
  Flight& f = flights_[index];
  if (f.request.id == load_.warmup_requests && on_measure_begin_) {
    on_measure_begin_();
    // A closed loop's client sends once the harness has begun measuring:
    // the hook's time is not its request's (an open loop's arrivals keep
    // their schedule).
    if (!open()) {
      measure_began_ns_ = clock_->NowNs();
      f.arrival_ns = measure_began_ns_;
      f.request.arrival_ns = f.arrival_ns - start_ns_;
    }
  }
  ++sent_;
  waiting_.push_back(index);
}

void Scheduler::Finish(int index, int64_t now) {
  Flight& f = flights_[index];
  f.done_ns = now;
  ++finished_;
  if (f.measured) ++measured_done_;
  // The load goes on until every measured request has finished.
  if (measured_done_ == load_.num_requests) return;
  if (!open()) {
    // A wave's clients send at once, after the measure-begin hook where
    // it ran among them.
    const int64_t sent = std::max(now, measure_began_ns_);
    Request next = requests_.Next();
    next.arrival_ns = sent - start_ns_;
    Arrive(next, sent);
  } else if (!held_.empty() && (load_.concurrency == 0 || InFlight() < load_.concurrency)) {
    Send(held_.front());
    held_.pop_front();
  }
}

absl::Status Scheduler::Admit() {
  const bool free = absl::c_find(slot_of_, -1) != slot_of_.end();
  if ((waiting_.empty() || !free) && prefilling_.empty()) return absl::OkStatus();
  // A prefill's tokens come after every step launched before it: those
  // steps' tokens first, each at its own time (and the slots they free).
  if (auto s = Drain(); !s.ok()) return s;
  for (size_t slot = 0; slot < slot_of_.size() && !waiting_.empty(); ++slot) {
    if (slot_of_[slot] >= 0) continue;
    slot_of_[slot] = waiting_.front();
    prefilling_.push_back(static_cast<int>(slot));
    waiting_.pop_front();
  }
  // The prompts in the cache's slots, oldest first, up to the chunk.
  std::vector<Model::Admission> chunks;
  int budget = load_.prefill_chunk > 0 ? load_.prefill_chunk : INT_MAX;
  for (size_t k = 0; k < prefilling_.size() && budget > 0; ++k) {
    const int slot = prefilling_[k];
    const Flight& f = flights_[slot_of_[slot]];
    const int length = std::min(f.request.input_tokens - f.prefilled, budget);
    chunks.push_back({slot, f.request, f.prefilled, length});
    budget -= length;
  }
  if (chunks.empty()) return absl::OkStatus();
  if (auto s = model_->Prefill(chunks); !s.ok()) return s;
  const int64_t now = clock_->NowNs();
  int first_tokens = 0;
  for (const Model::Admission& chunk : chunks) {
    prompts_.emplace_back(now, chunk.length);
    const int index = slot_of_[chunk.slot];
    Flight& f = flights_[index];
    f.prefilled += chunk.length;
    if (!chunk.last()) break;  // only the step's last chunk can stop short
    prefilling_.pop_front();
    ++first_tokens;
    f.first_ns = f.last_ns = now;
    f.launched = f.generated = 1;
    if (f.generated == f.request.output_tokens) {
      slot_of_[chunk.slot] = -1;
      Finish(index, now);
    }
  }
  if (first_tokens > 0) first_tokens_.emplace_back(now, first_tokens);
  return absl::OkStatus();
}

// Launches a step for every request in a slot with tokens left to launch,
// then waits for the steps past those the model runs ahead; whether it
// launched or took any.
absl::StatusOr<bool> Scheduler::DecodeStep() {
  std::vector<Model::Step> steps;
  for (size_t slot = 0; slot < slot_of_.size(); ++slot) {
    if (slot_of_[slot] < 0) continue;
    Flight& f = flights_[slot_of_[slot]];
    // Not yet prefilled, or every token launched.
    if (f.launched == 0 || f.launched == f.request.output_tokens) continue;
    steps.push_back({static_cast<int>(slot), f.request.input_tokens + f.launched - 1});
    ++f.launched;
  }
  const bool launch = !steps.empty();
  if (launch) {
    if (auto s = model_->Launch(steps); !s.ok()) return s;
    launched_.push_back(std::move(steps));
  }
  // Nothing to launch: the steps in flight hold every token left.
  const size_t ahead = launch ? static_cast<size_t>(std::max(0, model_->StepsAhead())) : 0;
  const bool took = launched_.size() > ahead;
  while (launched_.size() > ahead) {
    if (auto s = Observe(); !s.ok()) return s;
  }
  return launch || took;
}

// Waits for the oldest step in flight and takes its tokens, at the time
// they are on the host.
absl::Status Scheduler::Observe() {
  if (auto s = model_->Wait(); !s.ok()) return s;
  const int64_t now = clock_->NowNs();
  const std::vector<Model::Step> steps = std::move(launched_.front());
  launched_.pop_front();
  const int n = static_cast<int>(steps.size());
  steps_.emplace_back(now, n);
  for (const Model::Step& step : steps) {
    const int index = slot_of_[step.slot];
    Flight& f = flights_[index];
    if (f.measured) gaps_.emplace_back(now, Ms(now - f.last_ns));
    f.last_ns = now;
    if (++f.generated == f.request.output_tokens) {
      slot_of_[step.slot] = -1;
      Finish(index, now);
    }
  }
  return absl::OkStatus();
}

absl::Status Scheduler::Drain() {
  while (!launched_.empty()) {
    if (auto s = Observe(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<Outcome> Scheduler::Run(const std::atomic<bool>* cancel) {
  start_ns_ = clock_->NowNs();
  const int64_t deadline = load_.max_time_ns > 0 ? start_ns_ + load_.max_time_ns : INT64_MAX;
  // An open loop draws each arrival ahead; a closed loop's clients send
  // their first requests at once, each next one as its last ends.
  Request next;
  if (open()) {
    next = requests_.Next();
  } else {
    for (int i = 0; i < load_.concurrency; ++i) Arrive(requests_.Next(), start_ns_);
  }
  bool stopped = false, cancelled = false;
  while (measured_done_ < load_.num_requests) {
    if (cancel != nullptr && cancel->load()) {
      cancelled = true;
      break;
    }
    int64_t now = clock_->NowNs();
    if (now >= deadline) {
      stopped = true;
      break;
    }
    while (open() && start_ns_ + next.arrival_ns <= now) {
      Arrive(next, start_ns_ + next.arrival_ns);
      next = requests_.Next();
    }
    if (auto s = Admit(); !s.ok()) return s;
    auto progressed = DecodeStep();
    if (!progressed.ok()) return progressed.status();
    if (*progressed || !waiting_.empty()) continue;
    // Nothing in a slot, nothing waiting: the next arrival, where a trace
    // has one left.
    if (!open() || next.arrival_ns >= kNever) break;
    // In slices, so that a cancel is read meanwhile.
    constexpr int64_t kSliceNs = 100000000;
    clock_->SleepUntilNs(std::min({start_ns_ + next.arrival_ns, deadline, now + kSliceNs}));
  }
  // The steps still in flight end before the figures are taken: after the
  // last measured request, their tokens are past the window; after a stop
  // or a cancel, they came past the run's end and are not counted.
  const int64_t end_ns = clock_->NowNs();
  if (stopped || cancelled) {
    for (; !launched_.empty(); launched_.pop_front()) {
      if (auto s = model_->Wait(); !s.ok()) return s;
    }
  } else if (auto s = Drain(); !s.ok()) {
    return s;
  }
  Outcome out = Figures(end_ns);
  out.stopped_at_max_time = stopped;
  out.cancelled = cancelled;
  if (out.requests == 0 && !cancelled) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no measured request finished within max_time_ms ", load_.max_time_ns / 1000000,
        " (", sent_, " sent, ", finished_, " finished); raise --max-time-ms or lower the load"));
  }
  return out;
}

// Sums the counts of events whose time lies in (from, to] (and counts
// those events in *events_in): what happened at the window's start (a
// closed loop's last warm-up token, as its next request is sent) belongs
// before it.
int64_t CountIn(const std::vector<std::pair<int64_t, int>>& events, int64_t from, int64_t to,
                int* events_in = nullptr) {
  int64_t n = 0;
  int in = 0;
  for (const auto& [t, count] : events) {
    if (t > from && t <= to) {
      n += count;
      ++in;
    }
  }
  if (events_in != nullptr) *events_in = in;
  return n;
}

// Little's law over the span of the measured arrivals (out->requests > 0
// only): every request's time in the system within it, over its length,
// against the rate times the same requests' mean time in the system.
void Scheduler::LittlesLaw(int64_t first_arrival, int64_t last_arrival, int64_t end_ns,
                           Outcome* out) const {
  int measured_arrived = 0;
  for (const Flight& f : flights_) measured_arrived += f.measured;
  if (measured_arrived > 1 && last_arrival > first_arrival && out->requests > 0) {
    // The rate over [first, last): the arrivals at the span's end begin
    // the next gap (a closed loop's clients send in waves, a wave at once).
    const double span_ns = static_cast<double>(last_arrival - first_arrival);
    int before_last = 0;
    for (const Flight& f : flights_) before_last += f.measured && f.arrival_ns < last_arrival;
    out->achieved_rate = before_last / (span_ns / 1e9);
    // Time in the system, mean over the same requests the rate counts.
    double inside_ns = 0, e2e_ns = 0;
    int counted = 0;
    for (const Flight& f : flights_) {
      const int64_t end = f.done_ns >= 0 ? f.done_ns : end_ns;
      const int64_t from = std::max(f.arrival_ns, first_arrival), to = std::min(end, last_arrival);
      if (to > from) inside_ns += static_cast<double>(to - from);
      if (f.measured && f.arrival_ns < last_arrival) {
        e2e_ns += static_cast<double>(end - f.arrival_ns);
        ++counted;
      }
    }
    out->mean_in_flight = inside_ns / span_ns;
    if (counted > 0) out->littles_law_in_flight = out->achieved_rate * e2e_ns / counted / 1e9;
  }
}

Outcome Scheduler::Figures(int64_t end_ns) const {
  Outcome out;
  out.requests_asked = load_.num_requests;
  out.warmup_requests = load_.warmup_requests;
  out.asked_rate = load_.request_rate;
  for (const auto& [t, ms] : gaps_) out.itl_ms.push_back(ms);
  // The measured requests' arrivals, and the window: from the first one's
  // arrival to the last one's end (the run's end where one did not end).
  int64_t first_arrival = INT64_MAX, last_arrival = 0, window_end = 0;
  int measured_arrived = 0;
  for (const Flight& f : flights_) {
    if (!f.measured) continue;
    ++measured_arrived;
    first_arrival = std::min(first_arrival, f.arrival_ns);
    last_arrival = std::max(last_arrival, f.arrival_ns);
    window_end = std::max(window_end, f.done_ns >= 0 ? f.done_ns : end_ns);
    if (f.done_ns < 0) continue;
    ++out.requests;
    const double ttft = Ms(f.first_ns - f.arrival_ns), e2e = Ms(f.done_ns - f.arrival_ns);
    out.ttft_ms.push_back(ttft);
    out.e2e_ms.push_back(e2e);
    double tpot = 0;
    if (f.request.output_tokens > 1) {
      tpot = (e2e - ttft) / (f.request.output_tokens - 1);
      out.tpot_ms.push_back(tpot);
    }
    const bool slo = load_.slo_ttft_ms > 0 || load_.slo_tpot_ms > 0 || load_.slo_e2e_ms > 0;
    if (slo && (load_.slo_ttft_ms == 0 || ttft <= load_.slo_ttft_ms) &&
        (load_.slo_tpot_ms == 0 || tpot <= load_.slo_tpot_ms) &&
        (load_.slo_e2e_ms == 0 || e2e <= load_.slo_e2e_ms)) {
      ++out.requests_meeting_slo;
    }
  }
  if (measured_arrived == 0 || window_end <= first_arrival) return out;
  out.window_ms = Ms(window_end - first_arrival);
  const double window_s = out.window_ms / 1e3;
  int finished_in_window = 0;
  for (const Flight& f : flights_) {
    finished_in_window += f.done_ns > first_arrival && f.done_ns <= window_end;
  }
  out.request_throughput = finished_in_window / window_s;
  int decode_steps = 0;
  const int64_t decoded = CountIn(steps_, first_arrival, window_end, &decode_steps);
  const int64_t generated = CountIn(first_tokens_, first_arrival, window_end) + decoded;
  out.output_tokens_per_s = static_cast<double>(generated) / window_s;
  out.total_tokens_per_s =
      static_cast<double>(generated + CountIn(prompts_, first_arrival, window_end)) / window_s;
  out.goodput = out.requests_meeting_slo / window_s;
  if (decode_steps > 0) out.mean_batch = static_cast<double>(decoded) / decode_steps;
  if (!out.tpot_ms.empty()) {
    out.output_tokens_per_s_per_user = 1000 / stats::Median(out.tpot_ms);
  }
  LittlesLaw(first_arrival, last_arrival, end_ns, &out);
  Slices(first_arrival, window_end, &out);
  return out;
}

// The window (from, to] in slices of load_.slice_ms, the last one ending
// with it (and holding the rest past load_.max_slices); each event goes to
// the slice its time falls in, as CountIn counts them.
void Scheduler::Slices(int64_t from, int64_t to, Outcome* out) const {
  if (load_.slice_ms <= 0) return;
  const int64_t width = std::max<int64_t>(1, std::llround(load_.slice_ms * 1e6));
  const int64_t count = std::min<int64_t>((to - from + width - 1) / width,
                                            std::max(1, load_.max_slices));
  out->slices.resize(count);
  auto slice_of = [&](int64_t t) -> Slice* {
    if (t <= from || t > to) return nullptr;
    return &out->slices[std::min((t - from - 1) / width, count - 1)];
  };
  std::vector<std::vector<double>> ttft(count), itl(count);
  std::vector<int> decode_steps(count, 0);
  for (const auto& [t, n] : first_tokens_) {
    if (Slice* s = slice_of(t)) s->output_tokens += n;
  }
  for (const auto& [t, n] : steps_) {
    if (Slice* s = slice_of(t)) {
      s->output_tokens += n;
      s->mean_batch += n;
      ++decode_steps[s - out->slices.data()];
    }
  }
  for (const Flight& f : flights_) {
    if (Slice* s = slice_of(f.done_ns)) ++s->requests_finished;
    if (Slice* s = f.measured && f.generated > 0 ? slice_of(f.first_ns) : nullptr) {
      ttft[s - out->slices.data()].push_back(Ms(f.first_ns - f.arrival_ns));
    }
  }
  for (const auto& [t, ms] : gaps_) {
    if (Slice* s = slice_of(t)) itl[s - out->slices.data()].push_back(ms);
  }
  for (int64_t i = 0; i < count; ++i) {
    Slice& s = out->slices[i];
    const int64_t a = from + i * width, b = i == count - 1 ? to : a + width;
    s.start_ms = Ms(a - from);
    s.end_ms = Ms(b - from);
    s.output_tokens_per_s = static_cast<double>(s.output_tokens) / (Ms(b - a) / 1e3);
    if (decode_steps[i] > 0) s.mean_batch /= decode_steps[i];
    if (!ttft[i].empty()) s.ttft_p50_ms = stats::Median(ttft[i]);
    if (!itl[i].empty()) s.itl_p50_ms = stats::Median(itl[i]);
  }
}

}  // namespace

Request Requests::Next() {
  if (!load_.trace.empty()) {
    if (next_id_ >= static_cast<int64_t>(load_.trace.size())) {
      Request none;
      none.id = next_id_;
      none.arrival_ns = kNever;
      return none;
    }
    Request r = load_.trace[next_id_];
    r.id = next_id_++;
    return r;
  }
  Generator g(load_.seed, next_id_);
  Request r;
  r.id = next_id_++;
  if (r.id > 0 && load_.request_rate > 0) {
    const double k = load_.burstiness > 0 ? load_.burstiness : 1;
    const double gap = k == 1 ? -std::log(g.Uniform()) : g.Gamma(k) / k;
    arrival_s_ += gap / load_.request_rate;
  }
  // An arrival past what int64 nanoseconds hold never comes.
  r.arrival_ns = arrival_s_ * 1e9 >= static_cast<double>(kNever)
                     ? kNever
                     : static_cast<int64_t>(std::llround(arrival_s_ * 1e9));
  r.input_tokens = g.Between(load_.input_len, load_.input_len_max);
  r.output_tokens = g.Between(load_.output_len, load_.output_len_max);
  return r;
}

Timeline* SteadyTimeline() {
  class Steady : public Timeline {
   public:
    int64_t NowNs() override {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::steady_clock::now().time_since_epoch())
          .count();
    }
    void SleepUntilNs(int64_t ns) override {
      const int64_t wait = ns - NowNs();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
    }
  };
  static Steady* steady = new Steady;
  return steady;
}

absl::StatusOr<Outcome> Serve(const Load& load, Model* model, Timeline* clock,
                              const std::atomic<bool>* cancel,
                              const std::function<void()>& on_measure_begin) {
  if (load.request_rate <= 0 && load.trace.empty() && load.concurrency < 1) {
    return absl::InvalidArgumentError("a closed loop needs concurrency of at least 1");
  }
  if (load.num_requests < 1 || load.slots < 1) {
    return absl::InvalidArgumentError("num_requests and slots must be at least 1");
  }
  Scheduler scheduler(load, model, clock, on_measure_begin);
  return scheduler.Run(cancel);
}

}  // namespace gpubench::serve
