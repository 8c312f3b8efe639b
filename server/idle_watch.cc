#include "server/idle_watch.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/time/clock.h"

namespace gpubench::server {

IdleWatch::IdleWatch(absl::Duration idle) : idle_(idle) {
  thread_ = std::thread([this] { Loop(); });
}

IdleWatch::~IdleWatch() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

int64_t IdleWatch::Watch(std::function<void(Reason)> cancel) {
  absl::MutexLock lock(&mu_);
  const int64_t token = next_token_++;
  streams_[token] = Stream{absl::Now(), absl::InfiniteFuture(), std::move(cancel)};
  return token;
}

void IdleWatch::Touch(int64_t token) {
  absl::MutexLock lock(&mu_);
  if (auto it = streams_.find(token); it != streams_.end()) it->second.last = absl::Now();
}

void IdleWatch::SetDeadline(int64_t token, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  if (auto it = streams_.find(token); it != streams_.end()) it->second.deadline = deadline;
}

void IdleWatch::Unwatch(int64_t token) {
  absl::MutexLock lock(&mu_);
  streams_.erase(token);
  // Its cancel may be running on the watch's thread: wait it out, so the
  // stream can be deleted once this returns.
  struct NotCancelling {
    const int64_t* cancelling;
    int64_t token;
  } wait{&cancelling_, token};
  mu_.Await(absl::Condition(
      +[](NotCancelling* w) { return *w->cancelling != w->token; }, &wait));
}

void IdleWatch::Loop() {
  // A quarter of the idle timeout between looks (at most 250 ms): a stream
  // is cancelled between idle and 1.25 idle after its last progress, and at
  // most 250 ms after its deadline.
  const bool idles = idle_ > absl::ZeroDuration();
  const absl::Duration period =
      idles ? std::min(idle_ / 4, absl::Milliseconds(250)) : absl::Milliseconds(250);
  mu_.Lock();
  while (!mu_.AwaitWithTimeout(absl::Condition(&stop_), period)) {
    const absl::Time now = absl::Now();
    std::vector<std::pair<int64_t, Reason>> ended;
    for (const auto& [token, stream] : streams_) {
      // Idle first: a stream past both is told it went quiet, the nearer cause.
      if (idles && now - stream.last >= idle_) {
        ended.emplace_back(token, Reason::kIdle);
      } else if (now >= stream.deadline) {
        ended.emplace_back(token, Reason::kDeadline);
      }
    }
    for (const auto& [token, reason] : ended) {
      auto it = streams_.find(token);
      if (it == streams_.end()) continue;  // unwatched while we cancelled another
      std::function<void(Reason)> cancel = std::move(it->second.cancel);
      streams_.erase(it);
      cancelling_ = token;
      mu_.Unlock();
      cancel(reason);
      mu_.Lock();
      cancelling_ = 0;
    }
  }
  mu_.Unlock();
}

}  // namespace gpubench::server
