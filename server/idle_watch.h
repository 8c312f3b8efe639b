// Cancels streams that go quiet or drag on. An upload holds part of the
// shared model quota from its header on: one that sends nothing more, or only
// a byte now and then, must give it back, or a few such clients refuse
// everyone else's uploads.
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

// Thread-safe. Each watched stream says when it made progress (Touch) and may
// be given a deadline; one that made none for `idle`, or that reaches its
// deadline, has its cancel function called, once, with the reason, on the
// watch's own thread, with no lock of the watch held.
class IdleWatch {
 public:
  enum class Reason { kIdle, kDeadline };

  // idle <= 0: no stream is cancelled for being idle (deadlines still are).
  explicit IdleWatch(absl::Duration idle);
  ~IdleWatch();  // joins the thread; every stream must be unwatched first

  IdleWatch(const IdleWatch&) = delete;
  IdleWatch& operator=(const IdleWatch&) = delete;

  // Starts watching; the returned token names the stream to Touch, give a
  // deadline and Unwatch. cancel must not call Watch, Touch, SetDeadline or
  // Unwatch.
  int64_t Watch(std::function<void(Reason)> cancel);
  void Touch(int64_t token);
  // Progress or not, the stream is cancelled at `deadline`. Touch does not
  // move it: a trickle of bytes keeps a stream from being idle, not alive.
  void SetDeadline(int64_t token, absl::Time deadline);
  // After it returns, the stream's cancel is not running and never will.
  void Unwatch(int64_t token);

  absl::Duration idle() const { return idle_; }

 private:
  void Loop();

  struct Stream {
    absl::Time last;
    absl::Time deadline = absl::InfiniteFuture();
    std::function<void(Reason)> cancel;
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
