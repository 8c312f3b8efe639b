#include "server/auth.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/security/auth_context.h>

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/address.h"
#include "common/log.h"
#include "common/spec.h"
#include "google/protobuf/descriptor.h"
#include "common/sha256.h"

namespace gpubench::server {
namespace {

struct RpcRole {
  const char* method;
  v1::Role role;
};

// Who may call each BenchService rpc. Finer rules live with the rpc:
// cancelling or deleting another caller's job and uploading an AOTI package
// need admin.
constexpr RpcRole kRpcRoles[] = {
    {"SubmitJob", v1::ROLE_SUBMIT},      {"GetJob", v1::ROLE_READ},
    {"ListJobs", v1::ROLE_READ},         {"WatchJob", v1::ROLE_READ},
    {"CancelJob", v1::ROLE_SUBMIT},      {"DeleteJob", v1::ROLE_SUBMIT},
    {"GetRun", v1::ROLE_READ},           {"ListRuns", v1::ROLE_READ},
    {"QueryRuns", v1::ROLE_READ},        {"GetHostInfo", v1::ROLE_READ},
    {"CreateSchedule", v1::ROLE_ADMIN},  {"ListSchedules", v1::ROLE_READ},
    {"DeleteSchedule", v1::ROLE_ADMIN},  {"UploadModel", v1::ROLE_SUBMIT},
    {"GetTrace", v1::ROLE_READ},         {"ListRegressions", v1::ROLE_READ},
    {"DeleteModel", v1::ROLE_ADMIN},
    // The fleet's reference figures, and a host-wide exclusive job per
    // probe: the operator's.
    {"RunProbe", v1::ROLE_ADMIN},
    // A rank that listens on the network between hosts, or connects to an
    // address the caller names: the operator's too.
    {"RunHostPair", v1::ROLE_ADMIN},
};

constexpr char kService[] = "gpubench.v1.BenchService";
constexpr char kServicePath[] = "/gpubench.v1.BenchService/";
// The standard health service, and server reflection (v1alpha, and v1 in
// newer gRPC).
constexpr char kHealthPath[] = "/grpc.health.v1.Health/";
constexpr char kReflectionPath[] = "/grpc.reflection.";

absl::string_view View(grpc::string_ref s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

std::string RoleName(v1::Role role) {
  switch (role) {
    case v1::ROLE_READ:
      return "read";
    case v1::ROLE_SUBMIT:
      return "submit";
    case v1::ROLE_ADMIN:
      return "admin";
    default:
      return "none";
  }
}

absl::StatusOr<v1::Role> ParseRole(const std::string& name) {
  for (v1::Role role : {v1::ROLE_READ, v1::ROLE_SUBMIT, v1::ROLE_ADMIN}) {
    if (name == RoleName(role)) return role;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown role \"", name, "\"; expected read, submit or admin"));
}

absl::StatusOr<std::map<std::string, TokenEntry>> ParseTokenFile(const std::string& text) {
  std::map<std::string, TokenEntry> tokens;
  const std::string trimmed(absl::StripAsciiWhitespace(text));
  if (!trimmed.empty() && trimmed.find_first_of(" \t\n#") == std::string::npos) {
    tokens[Sha256Hex(trimmed)] = {"token", v1::ROLE_ADMIN};
    return tokens;
  }
  int n = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++n;
    line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::vector<std::string> words = absl::StrSplit(line, absl::ByAnyChar(" \t"),
                                                    absl::SkipEmpty());
    if (words.size() != 3 || !IsSha256Hex(words[0])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", n, ": expected \"SHA256HEX NAME ROLE\" (the token's sha256 in lower-case "
          "hex, e.g. from `printf %s TOKEN | sha256sum`)"));
    }
    auto role = ParseRole(words[2]);
    if (!role.ok()) return absl::InvalidArgumentError(absl::StrCat("line ", n, ": ",
                                                                   role.status().message()));
    if (!tokens.emplace(words[0], TokenEntry{words[1], *role}).second) {
      return absl::InvalidArgumentError(absl::StrCat("line ", n, ": the same token twice"));
    }
  }
  if (tokens.empty()) return absl::InvalidArgumentError("no token in the file");
  return tokens;
}

absl::StatusOr<std::shared_ptr<Authorizer>> Authorizer::Create(AuthOptions options) {
  const auto* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(kService);
  if (service == nullptr) return absl::InternalError("BenchService is not linked in");
  for (int i = 0; i < service->method_count(); ++i) {
    if (RequiredRole(service->method(i)->name()) == v1::ROLE_UNSPECIFIED) {
      return absl::FailedPreconditionError(absl::StrCat(
          "rpc ", service->method(i)->name(), " has no entry in the role table (auth.cc)"));
    }
  }
  return std::shared_ptr<Authorizer>(new Authorizer(std::move(options)));
}

v1::Role Authorizer::RequiredRole(const std::string& method) {
  for (const RpcRole& r : kRpcRoles) {
    if (method == r.method) return r.role;
  }
  return v1::ROLE_UNSPECIFIED;
}

absl::StatusOr<Caller> Authorizer::Authenticate(const InputMetadata& metadata,
                                                const grpc::AuthContext* context) const {
  auto header = metadata.find("authorization");
  if (header != metadata.end() && !options_.tokens.empty()) {
    // With no tokens configured a token is ignored, not an error.
    const absl::string_view value = View(header->second);
    if (!absl::StartsWith(value, "Bearer ")) {
      return absl::UnauthenticatedError(
          "the authorization header must be \"Bearer <token>\"");
    }
    return TokenCaller(value.substr(7));
  }
  if (options_.client_cert_role != v1::ROLE_UNSPECIFIED && context != nullptr &&
      context->IsPeerAuthenticated()) {
    auto subject = context->FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME);
    if (!subject.empty()) return Caller{std::string(View(subject[0])), options_.client_cert_role};
  }
  if (needs_credentials()) {
    return absl::UnauthenticatedError(
        "this daemon needs a token (\"authorization: Bearer <token>\": the fleet file's token "
        "or token_file) or a client certificate it trusts");
  }
  return Caller{"anonymous", options_.anonymous_role};
}

absl::StatusOr<Caller> Authorizer::TokenCaller(absl::string_view token) const {
  auto entry = options_.tokens.find(Sha256Hex(token));
  if (entry == options_.tokens.end()) return absl::UnauthenticatedError("unknown token");
  return Caller{entry->second.name, entry->second.role};
}

absl::StatusOr<Caller> Authorizer::AuthenticateHttp(absl::string_view authorization) const {
  if (options_.tokens.empty()) {
    if (!needs_credentials()) return Caller{"anonymous", options_.anonymous_role};
    return absl::UnauthenticatedError(
        "this daemon knows its callers by client certificate; its HTTP port takes tokens only");
  }
  if (absl::StartsWith(authorization, "Bearer ")) return TokenCaller(authorization.substr(7));
  std::string decoded;
  if (absl::StartsWith(authorization, "Basic ") &&
      absl::Base64Unescape(authorization.substr(6), &decoded)) {
    // A browser's login prompt: any user name, the token as the password.
    const size_t colon = decoded.find(':');
    if (colon != std::string::npos) return TokenCaller(absl::string_view(decoded).substr(colon + 1));
  }
  return absl::UnauthenticatedError(
      "send \"Authorization: Bearer <token>\" (or the token as a Basic password)");
}

grpc::Status Authorizer::Process(const InputMetadata& metadata, grpc::AuthContext* context,
                                 OutputMetadata* /*consumed*/, OutputMetadata* /*response*/) {
  // ":path" is "/gpubench.v1.BenchService/Method". The standard health
  // service answers anyone (Kubernetes' probes carry no token, and it says
  // only whether the daemon serves); server reflection, which describes the
  // API and nothing stored, needs the read role; any other path needs admin.
  auto path = metadata.find(":path");
  const absl::string_view full = path == metadata.end() ? "" : View(path->second);
  if (absl::StartsWith(full, kHealthPath)) return grpc::Status::OK;
  auto caller = Authenticate(metadata, context);
  if (!caller.ok()) {
    Log(LogLevel::kDebug, "refused ", full.substr(0, 200), ": unauthenticated");
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(caller.status().message()));
  }
  std::string method(full);
  v1::Role needed = v1::ROLE_ADMIN;
  if (absl::StartsWith(full, kServicePath)) {
    method = std::string(full.substr(sizeof(kServicePath) - 1));
    if (RequiredRole(method) != v1::ROLE_UNSPECIFIED) needed = RequiredRole(method);
  } else if (absl::StartsWith(full, kReflectionPath)) {
    needed = v1::ROLE_READ;
  }
  if (caller->role < needed) {
    Log(LogLevel::kDebug, "refused ", full.substr(0, 200), " to ", caller->name, ": needs ",
        RoleName(needed));
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat(method, " needs the ", RoleName(needed), " role; ",
                                     caller->name, " has ", RoleName(caller->role)));
  }
  return grpc::Status::OK;
}

Caller Authorizer::CallerOf(const grpc::ServerContextBase& context) const {
  // Authenticated again from the call's own metadata: an AuthContext is
  // shared by every call of a connection, so it cannot carry a per-call
  // caller.
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  auto caller = Authenticate(context.client_metadata(), auth.get());
  if (!caller.ok()) return Caller{"unknown", v1::ROLE_UNSPECIFIED};
  return *caller;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const std::string& listen, const grpc::SslServerCredentialsOptions* ssl,
    std::shared_ptr<Authorizer> authorizer) {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  if (ssl != nullptr) {
    credentials = grpc::SslServerCredentials(*ssl);
  } else if (absl::StartsWith(listen, "unix:") || absl::StartsWith(listen, "unix-abstract:")) {
    credentials = grpc::experimental::LocalServerCredentials(UDS);
  } else if (IsLoopbackAddress(listen)) {
    credentials = grpc::experimental::LocalServerCredentials(LOCAL_TCP);
  } else if (authorizer->needs_credentials()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "tokens or client certificates need TLS on ", listen,
        " (--tls-cert, --tls-key): over plaintext the CLI never sends a token"));
  } else {
    return grpc::InsecureServerCredentials();
  }
  credentials->SetAuthMetadataProcessor(std::move(authorizer));
  return credentials;
}

}  // namespace gpubench::server
