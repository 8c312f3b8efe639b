#include "server/rank_group.h"

#include <signal.h>

#include <map>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gpubench::server {
namespace {

// How long the other ranks may take to end once rank 0 has ended well; then
// they are killed (one stuck in a collective would hold the GPUs).
constexpr absl::Duration kOthersGrace = absl::Seconds(30);
// How long a failed rank's group waits for rank 0 to reach the failed point
// (it finishes the one before on its own) before it is stopped anyway.
constexpr absl::Duration kRankZeroCatchUp = absl::Seconds(60);
// How long rank 0's profiled run waits for the other ranks' traces of it.
constexpr absl::Duration kRankTraceWait = absl::Seconds(60);

// Thread-safety: Next() and Wait() on the job runner's thread; Stop(),
// Kill() and RssBytes() on any thread.
class RankGroup : public worker::Worker {
 public:
  RankGroup(worker::WorkerLauncher* launcher, v1::WorkerRequest request,
            std::unique_ptr<worker::Worker> rank0)
      : launcher_(launcher), request_(std::move(request)), rank0_(rank0.get()) {
    ranks_.push_back(std::move(rank0));
  }
  ~RankGroup() override {
    Kill();
    for (auto& t : drains_) t.join();
  }

  absl::StatusOr<bool> Next(v1::WorkerEvent* event) override {
    if (!started_) {
      started_ = true;
      if (auto s = StartOthers(); !s.ok()) {
        Kill();
        return s;
      }
    }
    auto got = rank0_->Next(event);
    if (!got.ok()) return got;
    if (!*got) return RankZeroEnded(event);
    if (event->has_run_started()) {
      current_ = event->run_started().index();
      absl::MutexLock lock(&mu_);
      rank0_index_ = current_;
    }
    if (event->has_run_finished()) {
      current_ = -1;
      // The other ranks' traces are the group's to add, never rank 0's.
      event->mutable_run_finished()->clear_rank_traces();
      AddRankTraces(event->mutable_run_finished());
    }
    if (event->has_done()) {
      absl::MutexLock lock(&mu_);
      rank0_done_ = true;
    }
    return true;
  }
  void Stop() override {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& w : ranks_) w->Stop();
  }
  void Kill() override {
    absl::MutexLock lock(&mu_);
    KillLocked();
  }
  worker::ExitInfo Wait() override {
    if (!rank0_exit_) rank0_exit_ = rank0_->Wait();
    {
      absl::MutexLock lock(&mu_);
      if (!rank0_exit_->ok()) {
        // The others may wait for it in a collective.
        KillLocked();
      } else {
        auto all_ended = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return drains_ended_ == static_cast<int>(drains_.size());
        };
        mu_.AwaitWithTimeout(absl::Condition(&all_ended), kOthersGrace);
        if (!all_ended()) KillLocked();
      }
    }
    for (auto& t : drains_) t.join();
    drains_.clear();
    absl::MutexLock lock(&mu_);
    if (failed_rank_ > 0 && (rank0_killed_by_group_ || rank0_exit_->ok())) {
      // A rank failed first and stopped the group: it is the cause.
      worker::ExitInfo cause = failed_exit_;
      cause.stderr_tail = absl::StrCat("rank ", failed_rank_, " of ", request_.rank().world_size(),
                                       " (", failed_why_, "): ", failed_exit_.stderr_tail);
      if (cause.ok()) cause.exit_code = 1;  // it failed its run, then exited
      return cause;
    }
    return *rank0_exit_;
  }
  int64_t RssBytes() const override {
    absl::MutexLock lock(&mu_);
    int64_t total = 0;
    for (const auto& w : ranks_) total += w->RssBytes();
    return total;
  }
  pid_t ProcessGroup() const override { return rank0_->ProcessGroup(); }
  int64_t ScratchBytes() const override {
    absl::MutexLock lock(&mu_);
    int64_t largest = 0;  // each rank's folder is bounded alone
    for (const auto& w : ranks_) largest = std::max(largest, w->ScratchBytes());
    return largest;
  }

 private:
  // Reads rank 0's store port, then starts the other ranks with it.
  absl::Status StartOthers() {
    v1::WorkerEvent event;
    auto got = rank0_->Next(&event);
    if (!got.ok() || !*got || !event.has_rendezvous()) {
      rank0_->Kill();
      rank0_exit_ = rank0_->Wait();
      return absl::UnavailableError(absl::StrCat("rank 0 did not open its rendezvous store (",
                                                 rank0_exit_->Describe(),
                                                 "): ", rank0_exit_->stderr_tail));
    }
    v1::WorkerRequest ranked = request_;
    ranked.mutable_rank()->set_store_port(event.rendezvous().store_port());
    // The other ranks are the run's own, not contention: in rank 0's group.
    ranked.set_process_group(rank0_->ProcessGroup());
    for (int r = 1; r < request_.rank().world_size(); ++r) {
      ranked.mutable_rank()->set_rank(r);
      auto w = launcher_->Start(ranked);
      if (!w.ok()) return absl::UnavailableError(absl::StrCat("cannot start rank ", r, ": ",
                                                              w.status().message()));
      absl::MutexLock lock(&mu_);
      worker::Worker* rank = w->get();
      ranks_.push_back(std::move(*w));
      drains_.emplace_back([this, rank, r] { Drain(rank, r); });
      if (stopping_) {
        KillLocked();
        return absl::CancelledError("the group was stopped while it started");
      }
    }
    return absl::OkStatus();
  }

  // Rank 0's stream ended. Where another rank's failed run stopped the group
  // inside rank 0's current run, that run is the one to report (its error
  // names the rank), not a death of rank 0.
  absl::StatusOr<bool> RankZeroEnded(v1::WorkerEvent* event) {
    {
      absl::MutexLock lock(&mu_);
      rank0_ended_ = true;  // a rank waiting for it to catch up waits no more
    }
    if (!rank0_exit_) rank0_exit_ = rank0_->Wait();
    absl::MutexLock lock(&mu_);
    rank0_killed_by_group_ = failed_rank_ > 0 && rank0_exit_->signal == SIGKILL;
    if (!failed_run_ || delivered_ || current_ < 0 || failed_run_->index() != current_ ||
        !rank0_killed_by_group_) {
      return false;
    }
    delivered_ = true;
    current_ = -1;
    *event->mutable_run_finished()->mutable_run() = *failed_run_;
    return true;
  }

  // The other ranks' traces of rank 0's finished run, where it has a trace:
  // each rank profiles the same window, and ends it at the same
  // collective, so the wait is the others' writing of theirs (bounded).
  void AddRankTraces(v1::RunFinished* finished) {
    const int index = finished->run().index();
    absl::MutexLock lock(&mu_);
    if (!finished->trace_json().empty()) {
      auto all_in = [this, index]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        if (stopping_) return true;
        for (int r = 1; r < request_.rank().world_size(); ++r) {
          auto last = last_finished_.find(r);
          const bool in = last != last_finished_.end() && last->second >= index;
          if (!in && ended_.count(r) == 0) return false;
        }
        return true;
      };
      mu_.AwaitWithTimeout(absl::Condition(&all_in), kRankTraceWait);
    }
    auto it = rank_traces_.find(index);
    if (it != rank_traces_.end() && !finished->trace_json().empty()) {
      for (auto& [r, json] : it->second) {
        v1::RankTrace* t = finished->add_rank_traces();
        t->set_rank(r);
        t->set_trace_json(std::move(json));
      }
    }
    rank_traces_.erase(rank_traces_.begin(), rank_traces_.upper_bound(index));
  }

  // Reads rank r's events to its end. A failed run, or an end before rank 0
  // is done, stops the group.
  void Drain(worker::Worker* rank, int r) {
    v1::WorkerEvent event;
    std::string why;
    std::optional<v1::Run> failed;
    int in_run = -1, last_done = -1;
    while (true) {
      auto got = rank->Next(&event);
      if (!got.ok()) {
        why = absl::StrCat("its stream broke: ", got.status().message());
        break;
      }
      if (!*got) break;
      if (event.has_run_started()) in_run = event.run_started().index();
      if (!event.has_run_finished()) continue;
      const v1::Run& run = event.run_finished().run();
      in_run = -1;
      last_done = run.index();
      {
        absl::MutexLock lock(&mu_);
        if (!event.run_finished().trace_json().empty()) {
          rank_traces_[run.index()][r] =
              std::move(*event.mutable_run_finished()->mutable_trace_json());
        }
        last_finished_[r] = run.index();
      }
      if (run.state() == v1::RUN_STATE_FAILED || run.state() == v1::RUN_STATE_OUT_OF_MEMORY) {
        why = absl::StrCat("its run ", run.index(), " failed");
        failed = run;
        failed->set_error(absl::StrCat("rank ", r, " of ", request_.rank().world_size(), ": ",
                                       run.error()));
        failed->clear_samples();
        break;  // it exits next; the group stops now
      }
    }
    if (failed) Fail(r, why, failed, {}, failed->index());
    const worker::ExitInfo exit = rank->Wait();
    bool rank0_done;
    {
      absl::MutexLock lock(&mu_);
      rank0_done = rank0_done_;
    }
    if (!failed && !exit.ok() && !rank0_done) {
      Fail(r, why.empty() ? exit.Describe() : why, {}, exit, in_run >= 0 ? in_run : last_done + 1);
    }
    absl::MutexLock lock(&mu_);
    if (failed_rank_ == r && failed) failed_exit_ = exit;
    ++drains_ended_;
    ended_.insert(r);
  }

  // Rank r failed in sweep point `index`: unless the group is already being
  // stopped (its end is then an effect), it becomes the cause and the group
  // stops, once rank 0 is in that point too. Rank 0 may still be finishing
  // an earlier point on its own (rank r passed that point's last
  // collective), and stopping it there would lose a good run.
  void Fail(int r, const std::string& why, const std::optional<v1::Run>& run,
            const worker::ExitInfo& exit, int index) {
    absl::MutexLock lock(&mu_);
    if (failed_rank_ != 0 || stopping_) return;
    failed_rank_ = r;
    failed_why_ = why;
    failed_run_ = run;
    failed_exit_ = exit;
    auto reached = [this, index]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || rank0_ended_ || rank0_index_ >= index;
    };
    mu_.AwaitWithTimeout(absl::Condition(&reached), kRankZeroCatchUp);
    KillLocked();
  }

  void KillLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    stopping_ = true;
    for (auto& w : ranks_) w->Kill();
  }

  worker::WorkerLauncher* const launcher_;
  const v1::WorkerRequest request_;
  worker::Worker* const rank0_;
  // The job runner's thread only.
  bool started_ = false;
  int current_ = -1;  // the run rank 0 is in
  std::optional<worker::ExitInfo> rank0_exit_;

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<worker::Worker>> ranks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> drains_;  // appended by the runner under mu_, joined by it
  int drains_ended_ ABSL_GUARDED_BY(mu_) = 0;
  bool rank0_done_ ABSL_GUARDED_BY(mu_) = false;
  bool rank0_ended_ ABSL_GUARDED_BY(mu_) = false;
  int rank0_index_ ABSL_GUARDED_BY(mu_) = -1;  // the last point rank 0 started
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool rank0_killed_by_group_ ABSL_GUARDED_BY(mu_) = false;
  bool delivered_ ABSL_GUARDED_BY(mu_) = false;
  int failed_rank_ ABSL_GUARDED_BY(mu_) = 0;  // the first rank above 0 that failed
  std::string failed_why_ ABSL_GUARDED_BY(mu_);
  std::optional<v1::Run> failed_run_ ABSL_GUARDED_BY(mu_);
  worker::ExitInfo failed_exit_ ABSL_GUARDED_BY(mu_);
  // The other ranks' traces by run index, then rank, until rank 0's run
  // takes them; each rank's last finished run, and the ranks that ended.
  std::map<int, std::map<int, std::string>> rank_traces_ ABSL_GUARDED_BY(mu_);
  std::map<int, int> last_finished_ ABSL_GUARDED_BY(mu_);
  std::set<int> ended_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<worker::Worker>> StartRankGroup(worker::WorkerLauncher* launcher,
                                                               const v1::WorkerRequest& request) {
  v1::WorkerRequest ranked = request;
  ranked.mutable_rank()->set_rank(0);
  auto first = launcher->Start(ranked);
  if (!first.ok()) return first.status();
  return std::unique_ptr<worker::Worker>(
      std::make_unique<RankGroup>(launcher, std::move(ranked), std::move(*first)));
}

}  // namespace gpubench::server
