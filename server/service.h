// gpubench.v1.BenchService on gRPC's callback API. Reactors validate and
// return; no model ever runs on a gRPC thread.
//
// Foundation stage: GetHostInfo and SubmitJob's dry run are served; the
// queue, workers and store arrive with the daemon issue, and until then the
// other rpcs answer UNIMPLEMENTED (the generated default).
#ifndef GPUBENCH_SERVER_SERVICE_H_
#define GPUBENCH_SERVER_SERVICE_H_

#include <string>

#include "gpubench/v1/service.grpc.pb.h"

namespace gpubench::server {

// Static facts about this machine: hostname, OS, kernel, CPU, memory.
v1::HostInfo ProbeMachine(const std::string& address);

// Thread-safe: its state is const after construction.
class BenchServiceImpl final : public v1::BenchService::CallbackService {
 public:
  explicit BenchServiceImpl(v1::HostInfo host) : host_(std::move(host)) {}

  grpc::ServerUnaryReactor* GetHostInfo(grpc::CallbackServerContext* context,
                                        const v1::GetHostInfoRequest* request,
                                        v1::GetHostInfoResponse* response) override;
  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* context,
                                      const v1::SubmitJobRequest* request,
                                      v1::SubmitJobResponse* response) override;

 private:
  const v1::HostInfo host_;
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_SERVICE_H_
