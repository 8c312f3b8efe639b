// Cancels streams that go quiet. An upload holds part of the shared model
// quota from its header on: one that sends nothing more must give it back,
// or a few idle clients refuse everyone else's uploads.
#ifndef GPUBENCH_SERVER_IDLE_WATCH_H_
#define GPUBENCH_SERVER_IDLE_WATCH_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gpubench::server {

// Thread-safe. Each watched stream says when it made progress (Touch); one
// that made none for `idle` has its cancel function called, once, on the
// watch's own thread, with no lock of the watch held.
class IdleWatch {
 public:
  // idle <= 0: nothing is ever cancelled (and no thread is started).
  explicit IdleWatch(absl::Duration idle);
  ~IdleWatch();  // joins the thread; every stream must be unwatched first

  IdleWatch(const IdleWatch&) = delete;
  IdleWatch& operator=(const IdleWatch&) = delete;

  // Starts watching; the returned token names the stream to Touch and
  // Unwatch. cancel must not call Watch, Touch or Unwatch.
  int64_t Watch(std::function<void()> cancel);
  void Touch(int64_t token);
  // After it returns, the stream's cancel is not running and never will.
  void Unwatch(int64_t token);

  absl::Duration idle() const { return idle_; }

 private:
  void Loop();

  struct Stream {
    absl::Time last;
    std::function<void()> cancel;
  };
  const absl::Duration idle_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_token_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int64_t, Stream> streams_ ABSL_GUARDED_BY(mu_);
  int64_t cancelling_ ABSL_GUARDED_BY(mu_) = 0;  // the token whose cancel runs now
  std::thread thread_;
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_IDLE_WATCH_H_
