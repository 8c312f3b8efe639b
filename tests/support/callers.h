// Callers of a real daemon with tokens: one token per role (plus a second
// submitter), the token file that names them, and the calls the attack and
// limit tests make as one of them. Test-only; not thread-safe.
#ifndef GPUBENCH_TESTS_SUPPORT_CALLERS_H_
#define GPUBENCH_TESTS_SUPPORT_CALLERS_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <fstream>
#include <string>

#include "common/sha256.h"
#include "gpubench/v1/service.grpc.pb.h"
#include "tests/support/daemon_process.h"

namespace gpubench::testing_support {

inline const char* const kAdmin = "admin-secret";
inline const char* const kAlice = "alice-secret";
inline const char* const kBob = "bob-secret";
inline const char* const kReader = "reader-secret";

// DIR/tokens, naming the four tokens above with their roles.
inline std::string WriteTokenFile(const std::string& dir) {
  const std::string path = dir + "/tokens";
  std::ofstream(path) << "# sha256 name role\n"
                      << Sha256Hex(kAdmin) << " ops admin\n"
                      << Sha256Hex(kAlice) << " alice submit\n"
                      << Sha256Hex(kBob) << " bob submit\n"
                      << Sha256Hex(kReader) << " dashboards read\n";
  return path;
}

// The token (none when empty) and a 30 s deadline.
inline void Auth(grpc::ClientContext* ctx, const std::string& token) {
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
}

inline grpc::Status Submit(Daemon& d, const v1::JobSpec& spec, const std::string& token = "",
                           std::string* job_id = nullptr) {
  grpc::ClientContext ctx;
  Auth(&ctx, token);
  v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  v1::SubmitJobResponse resp;
  grpc::Status s = d.stub()->SubmitJob(&ctx, req, &resp);
  if (job_id) *job_id = resp.job().job_id();
  return s;
}

// Uploads data as one model, in 1 MiB chunks; the stored model in *model.
inline grpc::Status Upload(Daemon& d, const std::string& data, v1::ModelFormat format,
                           const std::string& token, v1::ModelInfo* model = nullptr) {
  grpc::ClientContext ctx;
  Auth(&ctx, token);
  v1::UploadModelResponse resp;
  auto writer = d.stub()->UploadModel(&ctx, &resp);
  v1::UploadModelRequest req;
  req.mutable_header()->set_name("m");
  req.mutable_header()->set_sha256(Sha256Hex(data));
  req.mutable_header()->set_size_bytes(data.size());
  req.mutable_header()->set_format(format);
  writer->Write(req);
  for (size_t at = 0; at < data.size(); at += 1 << 20) {
    req.Clear();
    req.set_chunk(data.substr(at, 1 << 20));
    writer->Write(req);
  }
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  if (model) *model = resp.model();
  return s;
}

}  // namespace gpubench::testing_support

#endif  // GPUBENCH_TESTS_SUPPORT_CALLERS_H_
