#include "server/job_clock.h"

namespace gpubench::server {
namespace {

class RealJobClock : public JobClock {
 public:
  absl::Time Now() override { return absl::Now(); }
  void WaitUntil(absl::CondVar* cv, absl::Mutex* mu, absl::Time until) override {
    cv->WaitWithDeadline(mu, until);
  }
};

}  // namespace

JobClock* JobClock::Real() {
  static RealJobClock* clock = new RealJobClock;
  return clock;
}

}  // namespace gpubench::server
