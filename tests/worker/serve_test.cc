#include "worker/serve.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/stats.h"
#include "tests/support/command.h"

namespace gpubench::serve {
namespace {

class FakeTimeline : public Timeline {
 public:
  // Each read moves the clock on by tick_ns, as a real one moves between
  // two reads.
  int64_t NowNs() override { return now_ns += tick_ns; }
  void SleepUntilNs(int64_t ns) override { now_ns = std::max(now_ns, ns); }
  int64_t now_ns = 1'000'000'000;
  int64_t tick_ns = 0;
};

constexpr int64_t kMs = 1'000'000;

// A model whose steps take fixed times on the fake clock: a prefill
// prefill_ns, a decode step decode_ns plus per_request_ns for each request
// in it. With steps_ahead 0 each call takes its time; with 1 the steps run
// as on a GPU's queue, one after another from their launch, and a Wait
// moves the clock to its step's end, and then host_ns on (the host's own
// work on the tokens, which the next step queued overlaps). It checks
// what a server must hold: a prefill into a free slot, each decode's
// slots distinct, occupied, and each at the position after its last.
class FakeModel : public Model {
 public:
  explicit FakeModel(FakeTimeline* clock, int slots) : clock_(clock), position_(slots, -1) {}
  // The step's chunks one after another: their costs add up, a chunk its
  // share of its prompt's.
  absl::Status Prefill(const std::vector<Admission>& admitted) override {
    int64_t cost = 0;
    EXPECT_EQ(in_flight_, 0) << "a prefill behind a step in flight";
    for (const Admission& a : admitted) {
      EXPECT_EQ(a.start, prefilled_[a.slot]) << "slot " << a.slot << ": a chunk out of order";
      if (a.start == 0) EXPECT_EQ(position_.at(a.slot), -1) << "slot " << a.slot << " is taken";
      EXPECT_GT(a.length, 0);
      chunks.push_back(a);
      cost += prefill_ns(a.request) * a.length / a.request.input_tokens;
      prefilled_[a.slot] = a.last() ? 0 : a.start + a.length;
      if (!a.last()) continue;
      const Request& r = a.request;
      position_[a.slot] = r.input_tokens;
      output_[a.slot] = r.output_tokens;
      generated_[a.slot] = 1;
      prefilled.push_back(r);
      if (r.output_tokens == 1) position_[a.slot] = -1;
    }
    clock_->now_ns += cost;
    return absl::OkStatus();
  }
  absl::Status Launch(const std::vector<Step>& steps) override {
    std::set<int> seen;
    for (const Step& s : steps) {
      EXPECT_TRUE(seen.insert(s.slot).second) << "slot " << s.slot << " twice";
      EXPECT_EQ(s.position, position_.at(s.slot)) << "slot " << s.slot;
      ++position_[s.slot];
      if (++generated_[s.slot] == output_[s.slot]) position_[s.slot] = -1;
    }
    largest_batch = std::max(largest_batch, static_cast<int>(steps.size()));
    const int64_t cost = decode_ns + per_request_ns * static_cast<int64_t>(steps.size());
    ++in_flight_;
    if (steps_ahead == 0) {
      clock_->now_ns += cost + host_ns;
    } else {
      busy_until_ = std::max(busy_until_, clock_->now_ns) + cost;
      queue_.push_back(busy_until_);
    }
    return absl::OkStatus();
  }
  absl::Status Wait() override {
    EXPECT_GT(in_flight_, 0) << "a wait with no step in flight";
    if (in_flight_-- == 0) return absl::InternalError("no step in flight");
    if (steps_ahead > 0) {
      clock_->now_ns = std::max(clock_->now_ns, queue_.front()) + host_ns;
      queue_.pop_front();
    }
    return absl::OkStatus();
  }
  int StepsAhead() const override { return steps_ahead; }
  std::function<int64_t(const Request&)> prefill_ns = [](const Request&) { return 10 * kMs; };
  int64_t decode_ns = 5 * kMs;
  int64_t per_request_ns = 0;
  int64_t host_ns = 0;
  int steps_ahead = 0;
  std::vector<Request> prefilled;  // each whole prompt, at its last chunk
  std::vector<Admission> chunks;
  int largest_batch = 0;

 private:
  FakeTimeline* clock_;
  std::vector<int> position_;
  std::map<int, int> output_, generated_, prefilled_;
  int in_flight_ = 0;           // steps launched and not waited for
  std::deque<int64_t> queue_;  // steps_ahead > 0: each step in flight's end
  int64_t busy_until_ = 0;
};

Load ClosedLoop(int concurrency, int slots) {
  Load load;
  load.concurrency = concurrency;
  load.slots = slots;
  load.warmup_requests = concurrency;
  load.num_requests = 40;
  load.input_len = 16;
  load.output_len = 5;
  return load;
}

// One request at a time: each figure is what its definition makes of the
// model's step times.
TEST(ServeTest, OneClientSeesThePrefillAsTtftAndADecodeStepAsEachTokensGap) {
  FakeTimeline clock;
  FakeModel model(&clock, 1);
  auto out = Serve(ClosedLoop(1, 1), &model, &clock, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->requests, 40);
  ASSERT_EQ(out->ttft_ms.size(), 40u);
  for (double ttft : out->ttft_ms) EXPECT_DOUBLE_EQ(ttft, 10);
  for (double e2e : out->e2e_ms) EXPECT_DOUBLE_EQ(e2e, 10 + 4 * 5);
  for (double tpot : out->tpot_ms) EXPECT_DOUBLE_EQ(tpot, 5);
  ASSERT_EQ(out->itl_ms.size(), 40u * 4);
  for (double itl : out->itl_ms) EXPECT_DOUBLE_EQ(itl, 5);
  EXPECT_DOUBLE_EQ(out->output_tokens_per_s_per_user, 200);
  // 5 tokens every 30 ms, one request at a time.
  EXPECT_NEAR(out->output_tokens_per_s, 5 / 0.030, 1);
  EXPECT_NEAR(out->request_throughput, 1 / 0.030, 0.1);
  EXPECT_DOUBLE_EQ(out->mean_batch, 1);
  EXPECT_FALSE(out->stopped_at_max_time);
}

// A model that runs a step ahead: the next step is queued while the host
// takes the last one's tokens (2 ms of host work a step), so a token
// comes every 5 ms instead of every 7; the same requests are admitted in
// the same order and every gap is kept, Little's law holds.
TEST(ServeTest, AStepQueuedAheadHidesTheHostsWorkOnTheTokens) {
  std::vector<double> tpot_p50;
  std::vector<size_t> gaps;
  std::vector<std::vector<std::pair<int64_t, int>>> admitted;
  for (int ahead : {0, 1}) {
    FakeTimeline clock;
    FakeModel model(&clock, 4);
    model.steps_ahead = ahead;
    model.host_ns = 2 * kMs;
    model.prefill_ns = [](const Request&) { return 1 * kMs; };
    Load load = ClosedLoop(4, 4);
    load.output_len = 40;
    load.output_len_max = 60;
    auto out = Serve(load, &model, &clock, nullptr);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->requests, 40);
    gaps.push_back(out->itl_ms.size());
    admitted.emplace_back();
    for (const Request& r : model.prefilled) {
      if (r.id < load.warmup_requests + load.num_requests) {
        admitted.back().emplace_back(r.id, r.output_tokens);  // the measured ones
      }
    }
    EXPECT_NEAR(out->mean_in_flight / out->littles_law_in_flight, 1, 0.05) << "ahead " << ahead;
    EXPECT_GT(out->mean_batch, 3) << "ahead " << ahead;
    tpot_p50.push_back(stats::Median(out->tpot_ms));
  }
  EXPECT_EQ(gaps[0], gaps[1]) << "the same requests, every gap kept";
  EXPECT_EQ(admitted[0], admitted[1]);
  EXPECT_NEAR(tpot_p50[0], 7, 0.5);
  EXPECT_NEAR(tpot_p50[1], 5, 0.5);
}

// A long prompt arrives while a request decodes: prefilled whole, it holds
// that request's next token back for its whole prefill (160 ms); in chunks
// of 100 tokens, for one chunk (10 ms) and a decode step, the chunks
// coming in order and covering the prompt. The long request's first token
// comes later instead: the trade chunking makes.
TEST(ServeTest, AChunkedPrefillHoldsTheOthersTokensBackForAChunkOnly) {
  std::vector<double> longest_gap, long_ttft;
  for (int chunk : {0, 100}) {
    FakeTimeline clock;
    FakeModel model(&clock, 2);
    model.prefill_ns = [](const Request& r) { return int64_t{r.input_tokens} * 100'000; };
    Load load;
    load.slots = 2;
    load.num_requests = 2;
    load.prefill_chunk = chunk;
    load.trace = {{0, 0, 16, 40}, {0, 20 * kMs, 1600, 2}};
    auto out = Serve(load, &model, &clock, nullptr);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->requests, 2);
    longest_gap.push_back(*std::max_element(out->itl_ms.begin(), out->itl_ms.end()));
    long_ttft.push_back(*std::max_element(out->ttft_ms.begin(), out->ttft_ms.end()));
    // Every prompt token once, in order.
    std::map<int64_t, int> covered;
    for (const Model::Admission& a : model.chunks) {
      EXPECT_EQ(a.start, covered[a.request.id]) << "request " << a.request.id;
      EXPECT_LE(a.length, chunk > 0 ? chunk : a.request.input_tokens);
      covered[a.request.id] += a.length;
    }
    EXPECT_EQ(covered[1], 1600) << "chunk " << chunk;
    EXPECT_EQ(model.chunks.size(), chunk > 0 ? 17u : 2u);
    // Each token counted once: 40 + 2 over the window.
    EXPECT_NEAR(out->output_tokens_per_s * out->window_ms / 1e3, 42, 1e-6);
  }
  EXPECT_GE(longest_gap[0], 160);
  EXPECT_LE(longest_gap[1], 15 + 1e-9);
  EXPECT_GT(long_ttft[1], long_ttft[0] + 50);
}

// A closed loop keeps its clients' requests in flight and no more: every
// decode step holds all of them once the cache has room.
TEST(ServeTest, AClosedLoopKeepsConcurrencyRequestsInFlight) {
  FakeTimeline clock;
  FakeModel model(&clock, 8);
  auto out = Serve(ClosedLoop(4, 8), &model, &clock, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(model.largest_batch, 4);
  EXPECT_DOUBLE_EQ(out->mean_batch, 4);
  EXPECT_NEAR(out->mean_in_flight, 4, 0.2);
  EXPECT_DOUBLE_EQ(out->asked_rate, 0);
}

// Clients that send in waves (equal lengths: all end at one step) still
// satisfy Little's law: the rate counts the arrivals before the last wave,
// and the time in the system is of the same requests. A wave is sent at
// once, though the clock moves between two reads (1 us here) and the
// measure-begin hook takes time (30 ms).
TEST(ServeTest, LittlesLawHoldsForAClosedLoopsWaves) {
  FakeTimeline clock;
  clock.tick_ns = 1000;
  FakeModel model(&clock, 4);
  Load load = ClosedLoop(4, 4);
  load.num_requests = 8;  // two waves
  auto out = Serve(load, &model, &clock, nullptr, [&] { clock.now_ns += 30 * kMs; });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(out->mean_in_flight, 4, 1e-3);
  EXPECT_NEAR(out->littles_law_in_flight, 4, 1e-3);
}

// More clients than slots: the cache's slots bound each decode step, and
// the requests waiting for one count the wait in their time to first
// token.
TEST(ServeTest, RequestsOverTheSlotsWaitAndTheWaitCountsInTtft) {
  FakeTimeline clock;
  FakeModel model(&clock, 2);
  auto out = Serve(ClosedLoop(6, 2), &model, &clock, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(model.largest_batch, 2);
  EXPECT_GT(stats::Median(out->ttft_ms), 10 + 5);
}

// The first warmup_requests requests are slow here: none of their times
// may reach the figures. Nor may the measure-begin hook's (the harness
// starting its telemetry: 30 ms here) reach a closed loop's TTFT: its
// clients send once it has run.
TEST(ServeTest, WarmUpRequestsAreNotInTheFigures) {
  FakeTimeline clock;
  FakeModel model(&clock, 4);
  model.prefill_ns = [](const Request& r) { return r.id < 4 ? 1000 * kMs : 10 * kMs; };
  Load load = ClosedLoop(4, 4);
  int measure_began_at = -1;
  auto out = Serve(load, &model, &clock, nullptr, [&] {
    measure_began_at = static_cast<int>(model.prefilled.size());
    clock.now_ns += 30 * kMs;
  });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->requests, load.num_requests);
  EXPECT_EQ(out->warmup_requests, 4);
  EXPECT_EQ(out->ttft_ms.size(), static_cast<size_t>(load.num_requests));
  EXPECT_LT(*std::max_element(out->e2e_ms.begin(), out->e2e_ms.end()), 1000);
  EXPECT_GE(measure_began_at, 4);
  // Each wave of 4 clients: 4 prefills of 10 ms, one after another.
  EXPECT_DOUBLE_EQ(*std::max_element(out->ttft_ms.begin(), out->ttft_ms.end()), 40);
}

// A model that slows to half speed after its 100th decode step: the
// time slices show when, their tokens add up to the window's, and the
// last slice ends with the window; past max_slices the last holds the
// rest.
TEST(ServeTest, TimeSlicesShowASlowdownAndAddUpToTheWindow) {
  FakeTimeline clock;
  FakeModel fast(&clock, 1);
  class Slowing : public Model {
   public:
    explicit Slowing(FakeModel* m) : m_(m) {}
    absl::Status Prefill(const std::vector<Admission>& a) override { return m_->Prefill(a); }
    absl::Status Launch(const std::vector<Step>& steps) override {
      if (++steps_ > 100) m_->decode_ns = 10 * kMs;
      return m_->Launch(steps);
    }
    absl::Status Wait() override { return m_->Wait(); }

   private:
    FakeModel* m_;
    int steps_ = 0;
  } model(&fast);
  Load load = ClosedLoop(1, 1);
  load.slice_ms = 100;
  auto out = Serve(load, &model, &clock, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  // 40 requests after one of warm-up: 24 of 30 ms, then 16 of 50 ms.
  ASSERT_EQ(out->slices.size(), static_cast<size_t>(std::ceil(out->window_ms / 100)));
  int64_t tokens = 0;
  int finished = 0;
  for (const Slice& s : out->slices) {
    tokens += s.output_tokens;
    finished += s.requests_finished;
  }
  EXPECT_NEAR(static_cast<double>(tokens), out->output_tokens_per_s * out->window_ms / 1e3, 1e-6);
  EXPECT_EQ(finished, 40);
  EXPECT_DOUBLE_EQ(out->slices.front().end_ms, 100);
  EXPECT_DOUBLE_EQ(out->slices.back().end_ms, out->window_ms);
  // 5 tokens in 30 ms before, in 50 ms after; each gap 5 ms, then 10.
  EXPECT_NEAR(out->slices.front().output_tokens_per_s, 5 / 0.030, 12);
  EXPECT_NEAR(out->slices.back().output_tokens_per_s, 5 / 0.050, 12);
  EXPECT_DOUBLE_EQ(out->slices.front().itl_p50_ms, 5);
  EXPECT_DOUBLE_EQ(out->slices.back().itl_p50_ms, 10);
  EXPECT_DOUBLE_EQ(out->slices.front().ttft_p50_ms, 10);
  EXPECT_DOUBLE_EQ(out->slices.front().mean_batch, 1);

  FakeTimeline clock2;
  FakeModel capped(&clock2, 1);
  load.slice_ms = 1;
  load.max_slices = 3;
  out = Serve(load, &capped, &clock2, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->slices.size(), 3u);
  EXPECT_DOUBLE_EQ(out->slices[1].end_ms, 2);
  EXPECT_DOUBLE_EQ(out->slices[2].end_ms, out->window_ms);
}

Load OpenLoop(double rate, int requests) {
  Load load;
  load.request_rate = rate;
  load.slots = 16;
  load.warmup_requests = 16;
  load.num_requests = requests;
  load.input_len = 32;
  load.input_len_max = 64;
  load.output_len = 8;
  load.output_len_max = 24;
  load.seed = 7;
  return load;
}

// The Poisson process sends the rate asked, and Little's law holds: the
// mean in flight equals the rate times the mean time in the system (the
// scheduler's times are what they claim).
TEST(ServeTest, AnOpenLoopSendsTheRateAskedAndLittlesLawHolds) {
  FakeTimeline clock;
  FakeModel model(&clock, 16);
  model.prefill_ns = [](const Request& r) { return int64_t{r.input_tokens} * 100'000; };
  model.per_request_ns = 200'000;
  auto out = Serve(OpenLoop(40, 5000), &model, &clock, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(out->achieved_rate / 40, 1, 0.05);
  EXPECT_GT(out->mean_in_flight, 2);
  EXPECT_NEAR(out->mean_in_flight / out->littles_law_in_flight, 1, 0.05);
  EXPECT_NEAR(out->request_throughput / 40, 1, 0.05);
}

// Gaps of a gamma process: mean 1 / rate whatever the shape, and a
// coefficient of variation of 1 / sqrt(burstiness); the lengths are
// uniform in their ranges; the same seed sends the same requests.
TEST(ServeTest, RequestsFollowTheirDistributionsAndTheSeed) {
  for (double burstiness : {0.5, 1.0, 4.0}) {
    Load load = OpenLoop(10, 1);
    load.burstiness = burstiness;
    Requests a(load), b(load);
    std::vector<double> gaps_s;
    int64_t last = 0;
    std::set<int> inputs;
    for (int i = 0; i < 20000; ++i) {
      const Request r = a.Next(), s = b.Next();
      ASSERT_EQ(r.arrival_ns, s.arrival_ns);
      ASSERT_EQ(r.input_tokens, s.input_tokens);
      ASSERT_EQ(r.output_tokens, s.output_tokens);
      ASSERT_GE(r.input_tokens, 32);
      ASSERT_LE(r.input_tokens, 64);
      ASSERT_GE(r.output_tokens, 8);
      ASSERT_LE(r.output_tokens, 24);
      inputs.insert(r.input_tokens);
      if (i > 0) gaps_s.push_back((r.arrival_ns - last) / 1e9);
      last = r.arrival_ns;
    }
    EXPECT_EQ(inputs.size(), 33u);
    EXPECT_NEAR(stats::Mean(gaps_s), 0.1, 0.1 * 0.04) << burstiness;
    EXPECT_NEAR(stats::CoefficientOfVariation(gaps_s), 1 / std::sqrt(burstiness),
                0.05 / std::sqrt(burstiness))
        << burstiness;
  }
  Load other = OpenLoop(10, 1);
  other.seed = 8;
  Requests a(OpenLoop(10, 1)), c(other);
  a.Next();
  c.Next();
  EXPECT_NE(a.Next().arrival_ns, c.Next().arrival_ns);
}

// A run asleep until its next arrival reads a cancel meanwhile: a
// request every 1000 s does not hold a cancelled run for 1000 s.
TEST(ServeTest, ACancelIsReadWhileWaitingForTheNextArrival) {
  std::atomic<bool> cancel{false};
  class CancellingTimeline : public FakeTimeline {
   public:
    explicit CancellingTimeline(std::atomic<bool>* cancel) : cancel_(cancel) {}
    void SleepUntilNs(int64_t ns) override {
      FakeTimeline::SleepUntilNs(ns);
      if (++sleeps == 3) cancel_->store(true);
    }
    int sleeps = 0;

   private:
    std::atomic<bool>* cancel_;
  } clock(&cancel);
  const int64_t start = clock.now_ns;
  FakeModel model(&clock, 1);
  Load load = OpenLoop(0.001, 3);
  load.warmup_requests = 0;
  auto out = Serve(load, &model, &clock, &cancel);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->cancelled);
  EXPECT_EQ(clock.sleeps, 3);
  EXPECT_LT(clock.now_ns - start, 1000 * kMs);
}

// A load the model cannot serve in time stops at the bound, says so, and
// keeps the requests that did finish.
TEST(ServeTest, TheTimeBoundStopsARunAndSaysSo) {
  FakeTimeline clock;
  FakeModel model(&clock, 4);
  Load load = ClosedLoop(4, 4);
  load.num_requests = 1000;
  load.max_time_ns = 2000 * kMs;
  auto out = Serve(load, &model, &clock, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->stopped_at_max_time);
  EXPECT_GT(out->requests, 0);
  EXPECT_LT(out->requests, 1000);
  load.max_time_ns = 20 * kMs;  // not even the warm-up
  FakeModel fresh(&clock, 4);
  out = Serve(load, &fresh, &clock, nullptr);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
}

// A trace replays as written: each request arrives at its time with its
// lengths, in order, and none after the last.
TEST(ServeTest, ATraceReplaysItsRequestsAtTheirTimes) {
  FakeTimeline clock;
  const int64_t start = clock.now_ns;
  FakeModel model(&clock, 2);
  std::vector<int64_t> prefilled_at;
  model.prefill_ns = [&](const Request&) {
    prefilled_at.push_back(clock.now_ns - start);
    return 10 * kMs;
  };
  Load load;
  load.slots = 2;
  load.num_requests = 4;
  load.trace = {{0, 0, 5, 3}, {0, 40 * kMs, 7, 2}, {0, 41 * kMs, 9, 1}, {0, 500 * kMs, 4, 4}};
  auto out = Serve(load, &model, &clock, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(model.prefilled.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(model.prefilled[i].id, static_cast<int64_t>(i));
    EXPECT_EQ(model.prefilled[i].input_tokens, load.trace[i].input_tokens);
    EXPECT_EQ(model.prefilled[i].output_tokens, load.trace[i].output_tokens);
    EXPECT_GE(prefilled_at[i], load.trace[i].arrival_ns);
  }
  // The last arrives when nothing else is in flight: served at its time
  // (the fake prefill reads the clock before its step's cost is added).
  EXPECT_EQ(prefilled_at[3], 500 * kMs);
  EXPECT_EQ(out->requests, 4);
  EXPECT_DOUBLE_EQ(out->ttft_ms[3], 10);
  EXPECT_DOUBLE_EQ(out->e2e_ms[3], 10 + 3 * 5);
}

// Goodput counts the measured requests within every bound given.
TEST(ServeTest, GoodputCountsTheRequestsMeetingEverySlo) {
  FakeTimeline clock;
  FakeModel model(&clock, 1);
  model.prefill_ns = [](const Request& r) { return r.id % 2 == 0 ? 10 * kMs : 50 * kMs; };
  Load load = ClosedLoop(1, 1);
  load.slo_ttft_ms = 20;
  load.slo_tpot_ms = 5;
  auto out = Serve(load, &model, &clock, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->requests_meeting_slo, 20);
  EXPECT_NEAR(out->goodput, 20 / (out->window_ms / 1e3), 1e-9);
  load.slo_tpot_ms = 4.9;  // no request decodes that fast
  out = Serve(load, &model, &clock, nullptr);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->requests_meeting_slo, 0);
}

// The Python twin (bench/reference/serve.py, for the side by side) sends
// the same requests as the scheduler: its own SplitMix64 and lengths.
TEST(ServeTest, ThePythonTwinSendsTheSameRequests) {
  Load load = OpenLoop(7, 1);
  load.seed = 3;
  load.input_len = 2;
  load.input_len_max = 90;
  load.output_len = 1;
  load.output_len_max = 40;
  const testing_support::CommandResult twin = testing_support::RunCommand(
      absl::StrCat("python3 ", GPUBENCH_SOURCE_DIR, "/bench/reference/serve.py --requests 200 ",
                   "--seed 3 --rate 7 --input-len 2 --input-len-max 90 --output-len 1 ",
                   "--output-len-max 40"));
  ASSERT_EQ(twin.exit_code, 0) << twin.output;
  Requests ours(load);
  int lines = 0;
  for (absl::string_view line : absl::StrSplit(twin.output, '\n', absl::SkipEmpty())) {
    const Request r = ours.Next();
    // Arrivals to the nanosecond: both sum the same doubles.
    EXPECT_EQ(line, absl::StrCat("{\"id\": ", r.id, ", \"arrival_ns\": ", r.arrival_ns,
                                 ", \"input_tokens\": ", r.input_tokens,
                                 ", \"output_tokens\": ", r.output_tokens, "}"));
    ++lines;
  }
  EXPECT_EQ(lines, 200);
}

// A serving latency's percentile intervals are the order statistics whose
// binomial coverage is 95% (the ranks scipy.stats.binom gives), and none
// where the samples cannot bound the percentile.
TEST(ServeTest, PercentileIntervalsAreTheBinomialOrderStatistics) {
  auto ranks = [](int n) {
    std::vector<double> v(n);
    for (int i = 0; i < n; ++i) v[i] = i + 1;
    return v;
  };
  const stats::Interval median = stats::QuantileInterval95(ranks(100), 0.5);
  EXPECT_EQ(median.low, 40);
  EXPECT_EQ(median.high, 61);
  const stats::Interval p90 = stats::QuantileInterval95(ranks(1000), 0.9);
  EXPECT_EQ(p90.low, 881);
  EXPECT_EQ(p90.high, 919);
  const stats::Interval p99 = stats::QuantileInterval95(ranks(1000), 0.99);
  EXPECT_EQ(p99.low, 983);
  EXPECT_EQ(p99.high, 997);
  for (const auto& [q, fewest] : {std::pair{0.5, 6}, {0.9, 36}, {0.99, 368}}) {
    EXPECT_EQ(stats::QuantileInterval95(ranks(fewest - 1), q).high, 0) << q;
    EXPECT_GT(stats::QuantileInterval95(ranks(fewest), q).high, 0) << q;
  }
}

}  // namespace
}  // namespace gpubench::serve
