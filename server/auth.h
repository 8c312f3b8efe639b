// Who may call what: the one place the daemon authenticates a call and
// checks the role its rpc needs. The table of rpc -> role is kRpcRoles in
// auth.cc; every BenchService method must be in it (Create fails otherwise).
//
// gRPC's AuthMetadataProcessor would be the natural hook, but gRPC 1.51
// asserts when one is set on insecure (plaintext loopback) credentials, and
// its server interceptors cannot end a call. So each handler's first line is
// `Authorize(context, "Method")`, and this class decides from the table.
#ifndef GPUBENCH_SERVER_AUTH_H_
#define GPUBENCH_SERVER_AUTH_H_

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gpubench/v1/job.pb.h"

namespace gpubench::server {

// The caller of one rpc, once authenticated.
struct Caller {
  std::string name;  // the token's name, the certificate subject, or "anonymous"
  v1::Role role = v1::ROLE_UNSPECIFIED;
};

// One accepted token: only its sha256 is kept.
struct TokenEntry {
  std::string name;
  v1::Role role = v1::ROLE_UNSPECIFIED;
};

struct AuthOptions {
  // Accepted bearer tokens by the lower-case hex sha256 of the token. Empty:
  // no token is asked for, and every caller is anonymous_role.
  std::map<std::string, TokenEntry> tokens;
  // The role of a caller when tokens is empty.
  v1::Role anonymous_role = v1::ROLE_ADMIN;
  // Mutual TLS: a verified client certificate's subject is the caller's name,
  // with this role, when the call carries no token.
  v1::Role client_cert_role = v1::ROLE_UNSPECIFIED;
};

// The short name of a role ("read", "submit", "admin"), and back
// (InvalidArgument for anything else).
std::string RoleName(v1::Role role);
absl::StatusOr<v1::Role> ParseRole(const std::string& name);

// Parses a token file: one "SHA256HEX NAME ROLE" line per token ('#' starts a
// comment). InvalidArgument naming the line otherwise. A file holding one
// bare token (no spaces: the single --token-file of earlier versions) is one
// admin token named "token".
absl::StatusOr<std::map<std::string, TokenEntry>> ParseTokenFile(const std::string& text);

// Thread-safe; const after Create.
class Authorizer {
 public:
  // FailedPrecondition when a BenchService method has no entry in the role
  // table (a new rpc must say who may call it).
  static absl::StatusOr<std::unique_ptr<Authorizer>> Create(AuthOptions options);

  // Authenticates the call (bearer token, else a verified client
  // certificate, else anonymous) and checks the role `method` (a
  // BenchService method name, e.g. "SubmitJob") needs. Unauthenticated for a
  // missing or unknown token; PermissionDenied for a role too weak. Never
  // puts a token in a message.
  absl::StatusOr<Caller> Authorize(const grpc::ServerContextBase& context,
                                   const std::string& method) const;

  // The role a method needs; ROLE_UNSPECIFIED for an unknown method.
  static v1::Role RequiredRole(const std::string& method);


 private:
  explicit Authorizer(AuthOptions options) : options_(std::move(options)) {}
  absl::StatusOr<Caller> Authenticate(const grpc::ServerContextBase& context) const;

  const AuthOptions options_;
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_AUTH_H_
