// Who may call what: the one place the daemon authenticates a call and
// checks the role its rpc needs, before any handler runs. The table of
// rpc -> role is kRpcRoles in auth.cc; every BenchService method must be in
// it (Create fails otherwise).
#ifndef GPUBENCH_SERVER_AUTH_H_
#define GPUBENCH_SERVER_AUTH_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/auth_metadata_processor.h>
#include <grpcpp/security/server_credentials.h>

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

// The daemon's one authorization point: gRPC runs Process for every call
// before any handler sees it (it is the credentials' AuthMetadataProcessor,
// see ServerCredentialsFor), so a handler never checks a role itself. Process
// authenticates the call (bearer token, else a verified client certificate,
// else anonymous where no credentials are configured), looks up the role the
// rpc needs in the table (kRpcRoles in auth.cc; an rpc missing from it is
// refused by Create, a path not in it needs admin; the standard health
// service needs nothing, not even credentials, and server reflection the
// read role), and ends the call with
// UNAUTHENTICATED or PERMISSION_DENIED, or lets it through. Handlers that
// need to know who called ask CallerOf. Thread-safe; const after Create.
class Authorizer : public grpc::AuthMetadataProcessor {
 public:
  // FailedPrecondition when a BenchService method has no entry in the role
  // table (a new rpc must say who may call it).
  static absl::StatusOr<std::shared_ptr<Authorizer>> Create(AuthOptions options);

  // The role a method (e.g. "SubmitJob") needs; ROLE_UNSPECIFIED for an
  // unknown method.
  static v1::Role RequiredRole(const std::string& method);

  // Whether a caller must bring a token or a client certificate.
  bool needs_credentials() const {
    return !options_.tokens.empty() || options_.client_cert_role != v1::ROLE_UNSPECIFIED;
  }

  // grpc::AuthMetadataProcessor.
  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed, OutputMetadata* response) override;

  // Who made a call that Process let through (the same authentication, from
  // the call's metadata). Without a processor on the credentials (plaintext
  // on a non-loopback address, allowed only without credentials configured)
  // every caller is anonymous.
  Caller CallerOf(const grpc::ServerContextBase& context) const;

  // The caller of an HTTP request (the metrics port) from its Authorization
  // header: "Bearer <token>", or Basic with the token as the password (what a
  // browser's login prompt sends). Anonymous where no credentials are
  // configured; client certificates are not checked there, so a daemon that
  // knows its callers only by certificate is UNAUTHENTICATED on HTTP.
  absl::StatusOr<Caller> AuthenticateHttp(absl::string_view authorization) const;

 private:
  explicit Authorizer(AuthOptions options) : options_(std::move(options)) {}
  // `context` may be null (no transport security).
  absl::StatusOr<Caller> Authenticate(const InputMetadata& metadata,
                                      const grpc::AuthContext* context) const;

  // The caller a bearer token names; Unauthenticated for an unknown one.
  absl::StatusOr<Caller> TokenCaller(absl::string_view token) const;

  const AuthOptions options_;
};

// The server credentials for `listen` with `authorizer` installed: TLS when
// `ssl` is given, else gRPC's local credentials on a loopback or unix-socket
// address (plaintext on the wire, peers checked to be local). A non-loopback
// plaintext address gets insecure credentials and no processor, which is
// FailedPrecondition when the authorizer needs credentials: the tokens could
// not be checked (and the CLI never sends one in the clear).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const std::string& listen, const grpc::SslServerCredentialsOptions* ssl,
    std::shared_ptr<Authorizer> authorizer);

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_AUTH_H_
