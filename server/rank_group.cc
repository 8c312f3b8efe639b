#include "server/rank_group.h"

#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace gpubench::server {
namespace {

class RankGroup : public worker::Worker {
 public:
  explicit RankGroup(std::vector<std::unique_ptr<worker::Worker>> ranks)
      : ranks_(std::move(ranks)) {
    for (size_t r = 1; r < ranks_.size(); ++r) {
      drains_.emplace_back([this, r] { Drain(static_cast<int>(r)); });
    }
  }
  ~RankGroup() override {
    Kill();
    for (auto& t : drains_) t.join();
  }

  absl::StatusOr<bool> Next(v1::WorkerEvent* event) override {
    while (true) {
      auto got = ranks_[0]->Next(event);
      if (!got.ok() || !*got) return got;
      if (event->has_rendezvous()) continue;
      if (event->has_done()) {
        absl::MutexLock lock(&mu_);
        rank0_done_ = true;
      }
      return true;
    }
  }
  void Stop() override {
    Stopping();
    for (auto& w : ranks_) w->Stop();
  }
  void Kill() override {
    Stopping();
    for (auto& w : ranks_) w->Kill();
  }
  worker::ExitInfo Wait() override {
    worker::ExitInfo rank0 = ranks_[0]->Wait();
    if (!rank0.ok()) {
      // The others may wait for it in a collective. A rank that failed
      // first (and stopped the group) stays the cause.
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    if (!rank0.ok()) {
      for (auto& w : ranks_) w->Kill();
    }
    for (auto& t : drains_) t.join();
    drains_.clear();
    absl::MutexLock lock(&mu_);
    if (failed_rank_ > 0 && rank0.ok() == false) {
      // Rank 0 died because the group was stopped: the failing rank is the
      // cause the run's error names.
      worker::ExitInfo cause = failed_exit_;
      cause.stderr_tail = absl::StrCat("rank ", failed_rank_, " of ", ranks_.size(), " (",
                                       failed_why_, "): ", failed_exit_.stderr_tail);
      if (cause.ok()) cause.exit_code = 1;  // it failed its run, then exited
      return cause;
    }
    return rank0;
  }
  int64_t RssBytes() const override {
    int64_t total = 0;
    for (const auto& w : ranks_) total += w->RssBytes();
    return total;
  }

 private:
  // Reads rank r's events to its end. A failed run, or an end before rank 0
  // is done, stops the group.
  void Drain(int r) {
    v1::WorkerEvent event;
    std::string why;
    while (true) {
      auto got = ranks_[r]->Next(&event);
      if (!got.ok()) {
        why = absl::StrCat("its stream broke: ", got.status().message());
        break;
      }
      if (!*got) break;
      if (event.has_run_finished()) {
        const v1::Run& run = event.run_finished().run();
        if (run.state() == v1::RUN_STATE_FAILED || run.state() == v1::RUN_STATE_OUT_OF_MEMORY) {
          why = absl::StrCat("its run ", run.index(), " failed: ", run.error());
        }
      }
    }
    worker::ExitInfo exit = ranks_[r]->Wait();
    bool stop = false;
    {
      absl::MutexLock lock(&mu_);
      if (why.empty() && !exit.ok() && !rank0_done_) why = exit.Describe();
      // Once the group is being stopped, a rank's end is its effect.
      if (!why.empty() && failed_rank_ == 0 && !stopping_) {
        failed_rank_ = r;
        failed_why_ = why;
        failed_exit_ = exit;
        stop = true;
      }
    }
    if (stop) Kill();
  }

  void Stopping() {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }

  const std::vector<std::unique_ptr<worker::Worker>> ranks_;
  std::vector<std::thread> drains_;
  absl::Mutex mu_;
  bool rank0_done_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int failed_rank_ ABSL_GUARDED_BY(mu_) = 0;  // the first rank above 0 that failed
  std::string failed_why_ ABSL_GUARDED_BY(mu_);
  worker::ExitInfo failed_exit_ ABSL_GUARDED_BY(mu_);
};

// Kills and reaps what started before a failed start.
void Abandon(std::vector<std::unique_ptr<worker::Worker>>* ranks) {
  for (auto& w : *ranks) w->Kill();
  for (auto& w : *ranks) w->Wait();
}

}  // namespace

absl::StatusOr<std::unique_ptr<worker::Worker>> StartRankGroup(worker::WorkerLauncher* launcher,
                                                               const v1::WorkerRequest& request) {
  const int world_size = request.rank().world_size();
  std::vector<std::unique_ptr<worker::Worker>> ranks;
  v1::WorkerRequest ranked = request;
  ranked.mutable_rank()->set_rank(0);
  auto first = launcher->Start(ranked);
  if (!first.ok()) return first.status();
  ranks.push_back(std::move(*first));
  // Rank 0's first event is its store's port.
  v1::WorkerEvent event;
  auto got = ranks[0]->Next(&event);
  if (!got.ok() || !*got || !event.has_rendezvous()) {
    ranks[0]->Kill();
    const worker::ExitInfo exit = ranks[0]->Wait();
    return absl::UnavailableError(absl::StrCat(
        "rank 0 did not open its rendezvous store (", exit.Describe(), "): ", exit.stderr_tail));
  }
  ranked.mutable_rank()->set_store_port(event.rendezvous().store_port());
  for (int r = 1; r < world_size; ++r) {
    ranked.mutable_rank()->set_rank(r);
    auto w = launcher->Start(ranked);
    if (!w.ok()) {
      Abandon(&ranks);
      return absl::UnavailableError(
          absl::StrCat("cannot start rank ", r, ": ", w.status().message()));
    }
    ranks.push_back(std::move(*w));
  }
  return std::unique_ptr<worker::Worker>(std::make_unique<RankGroup>(std::move(ranks)));
}

}  // namespace gpubench::server
