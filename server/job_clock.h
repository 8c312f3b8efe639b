// The job runner's time (a job's timeout, the stop grace, the limits'
// polls): the real clock, or a test's that moves only when told.
#ifndef GPUBENCH_SERVER_JOB_CLOCK_H_
#define GPUBENCH_SERVER_JOB_CLOCK_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gpubench::server {

class JobClock {
 public:
  virtual ~JobClock() = default;
  virtual absl::Time Now() = 0;
  // Waits on cv (mu held) until it is signalled or this clock reaches
  // until; may return early (callers check again).
  virtual void WaitUntil(absl::CondVar* cv, absl::Mutex* mu, absl::Time until) = 0;

  // The system's clock.
  static JobClock* Real();
};

// A clock that stands still until Advance: a test's timeout in an instant.
// Its waits return every few real milliseconds, so that a waiter sees the
// time the test set.
class ManualJobClock : public JobClock {
 public:
  absl::Time Now() override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void WaitUntil(absl::CondVar* cv, absl::Mutex* mu, absl::Time /*until*/) override {
    cv->WaitWithTimeout(mu, absl::Milliseconds(2));
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::UnixEpoch();
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_JOB_CLOCK_H_
