// Serving a language model under load (mode serve), torch-free: the
// requests a load sends (drawn from a seed, the same for the same seed),
// and the scheduler that batches them as they come over a KV cache of
// slots (continuous batching), timing each request's tokens. The engine
// supplies the model's two steps (worker/engine/workloads/serve.cc); the
// tests drive the scheduler on a fake clock.
#ifndef GPUBENCH_WORKER_SERVE_H_
#define GPUBENCH_WORKER_SERVE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"

namespace gpubench::serve {

// One request. In an open loop, arrival_ns is its scheduled arrival after
// the run's start; in a closed loop it is set when a client sends it.
struct Request {
  int64_t id = 0;  // 0, 1, ... in the order sent
  int64_t arrival_ns = 0;
  int input_tokens = 0;
  int output_tokens = 0;
};
// A time that never comes: the arrival after a trace's last request.
inline constexpr int64_t kNever = INT64_MAX / 2;

// What the requests ask and how they arrive (gpubench.v1.ServeLoad, filled
// by the plan). A length's max of 0 (or below its min) makes it fixed.
struct Load {
  double request_rate = 0;  // requests a second; 0: a closed loop of concurrency
  double burstiness = 1;    // the gamma shape of the gaps (1: Poisson)
  int concurrency = 0;      // the most requests in flight; 0: no limit (open loop)
  int slots = 1;            // the KV cache's: the most requests decoded at once
  int warmup_requests = 0;  // sent first, left out of the figures
  int num_requests = 1;     // measured
  int input_len = 1, input_len_max = 0;
  int output_len = 1, output_len_max = 0;  // tokens generated, the first by the prefill
  uint64_t seed = 0;
  double slo_ttft_ms = 0, slo_tpot_ms = 0, slo_e2e_ms = 0;  // 0: no bound
  int64_t max_time_ns = 0;  // bounds the run; 0: none
  double slice_ms = 0;      // the window's time slices; 0: none
  // The most prompt tokens prefilled in one step: a longer prompt (or the
  // rest of a step's prompts) is prefilled in chunks over the next steps,
  // a decode step between each. 0: every admitted prompt whole.
  int prefill_chunk = 0;
  // The most slices kept, the last holding the rest: the worker's own
  // bound (a spec's is kMaxServeSlices in the run's max_time_ms).
  int max_slices = 1000;
  // Requests to replay instead of drawing them (their ids and arrivals
  // given, an open loop); none after the last.
  std::vector<Request> trace;
};

// The requests of a load, one after another. Request i's lengths and the
// gap before it come from a generator seeded by (seed, i) alone (SplitMix64;
// no std:: distribution, whose output differs between standard libraries):
// the same load sends the same requests on any host. The gaps are gamma
// with shape burstiness and mean 1 / request_rate (exponential at 1: a
// Poisson process); request 0 arrives at 0. A trace's requests are its
// own, and after its last none arrives (arrival_ns kNever).
// Thread-compatible.
class Requests {
 public:
  explicit Requests(const Load& load) : load_(load) {}
  Request Next();

 private:
  const Load load_;
  int64_t next_id_ = 0;
  double arrival_s_ = 0;
};

// The model as the scheduler drives it. A prefill returns once its tokens
// are on the host (a server streams each token as it is made); a decode
// step is launched, then waited for, and StepsAhead() steps may be
// launched before the oldest is waited for, so that a device that runs
// asynchronously has its next step queued while the host takes the
// last one's tokens.
class Model {
 public:
  virtual ~Model() = default;
  // Writes each request's prompt tokens start..start+length-1 into its
  // slot of the cache (a free one, at start 0; chunks come in order), and
  // where they end the prompt makes its first token: the chunks of one
  // step, prefilled together where they are alike.
  struct Admission {
    int slot = 0;
    Request request;
    int start = 0, length = 0;  // the chunk; a whole prompt: 0, input_tokens
    bool last() const { return start + length == request.input_tokens; }
  };
  virtual absl::Status Prefill(const std::vector<Admission>& admitted) = 0;
  // One token for each slot given, fed its last token at position (the
  // prompt's length plus the tokens launched for it, less one).
  struct Step {
    int slot = 0;
    int position = 0;
  };
  // Queues a step; returns at once where the device runs asynchronously.
  virtual absl::Status Launch(const std::vector<Step>& steps) = 0;
  // Returns once the oldest step launched and not waited for has its
  // tokens on the host.
  virtual absl::Status Wait() = 0;
  // How many steps may be in flight past the one waited for (0: each step
  // is waited for as soon as it is launched).
  virtual int StepsAhead() const { return 0; }
};

// Time as the scheduler reads it: a fake one in tests.
class Timeline {
 public:
  virtual ~Timeline() = default;
  virtual int64_t NowNs() = 0;
  virtual void SleepUntilNs(int64_t ns) = 0;
};
Timeline* SteadyTimeline();

// One time slice of the measured window (gpubench.v1.ServeSlice).
struct Slice {
  double start_ms = 0, end_ms = 0;  // from the window's start
  int64_t output_tokens = 0;
  double output_tokens_per_s = 0;
  int requests_finished = 0;
  double ttft_p50_ms = 0, itl_p50_ms = 0;  // 0: none in the slice
  double mean_batch = 0;
};

// What a run measured (gpubench.v1.ServeResult says what each figure is).
struct Outcome {
  // Per measured request (tpot: those of two or more tokens), and per gap
  // between two tokens of a measured request; milliseconds.
  std::vector<double> ttft_ms, tpot_ms, e2e_ms, itl_ms;
  int requests = 0;  // measured requests finished
  int requests_asked = 0;
  int warmup_requests = 0;
  double asked_rate = 0, achieved_rate = 0;  // requests a second
  double window_ms = 0;
  double request_throughput = 0;  // requests a second
  double output_tokens_per_s = 0, total_tokens_per_s = 0;
  double output_tokens_per_s_per_user = 0;
  int requests_meeting_slo = 0;
  double goodput = 0;  // requests a second; 0 without an SLO
  double mean_in_flight = 0, littles_law_in_flight = 0;
  double mean_batch = 0;
  std::vector<Slice> slices;  // Load.slice_ms's, in order; at most max_slices
  bool stopped_at_max_time = false;
  bool cancelled = false;
};

// Serves load on model until every measured request has finished (the
// load goes on meanwhile), max_time_ns passes, or *cancel is set. Each
// step: arrivals due join the queue (an open loop's over its concurrency
// wait outside it); waiting requests take the lowest free slots; the
// prompts in slots are prefilled together, oldest first, up to
// prefill_chunk tokens (a prompt's first token comes with its last chunk);
// then every request past its prefill decodes one token; a request that
// has all its tokens leaves its slot (a closed loop's client sends
// its next one then). on_measure_begin, when set, is called as the first
// measured request is sent. A model's error ends the run with it;
// FailedPrecondition when max_time_ns passed before any measured request
// finished. Runs on the calling thread.
absl::StatusOr<Outcome> Serve(const Load& load, Model* model, Timeline* clock,
                              const std::atomic<bool>* cancel,
                              const std::function<void()>& on_measure_begin = {});

}  // namespace gpubench::serve

#endif  // GPUBENCH_WORKER_SERVE_H_
