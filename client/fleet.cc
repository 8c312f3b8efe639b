#include "client/fleet.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/address.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace gpubench::client {
namespace {

std::string ExpandHome(const std::string& path) {
  if (path.rfind("~/", 0) != 0) return path;
  const char* home = std::getenv("HOME");
  return absl::StrCat(home ? home : "", path.substr(1));
}

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(ExpandHome(path));
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

constexpr char kDefaultAddress[] = "127.0.0.1:50051";

}  // namespace

std::string DefaultFleetPath() {
  if (const char* p = std::getenv("GPUBENCH_FLEET"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) {
    return absl::StrCat(x, "/gpubench/fleet.json");
  }
  return ExpandHome("~/.config/gpubench/fleet.json");
}

absl::StatusOr<std::vector<HostEntry>> ReadFleet(const std::string& path) {
  auto text = ReadText(path);
  if (!text.ok()) return text.status();
  google::protobuf::Struct root;
  if (auto s = google::protobuf::util::JsonStringToMessage(*text, &root); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fleet file ", path, ": not JSON: ", std::string(s.message())));
  }
  auto hosts = root.fields().find("hosts");
  if (hosts == root.fields().end() || !hosts->second.has_list_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fleet file ", path, ": needs a \"hosts\" list"));
  }
  std::vector<HostEntry> entries;
  int i = 0;
  for (const auto& value : hosts->second.list_value().values()) {
    const std::string where = absl::StrCat("fleet file ", path, ": hosts[", i++, "]");
    if (!value.has_struct_value()) return absl::InvalidArgumentError(where + ": not an object");
    HostEntry e;
    for (const auto& [key, v] : value.struct_value().fields()) {
      const bool is_string = v.kind_case() == google::protobuf::Value::kStringValue;
      if (key == "name" && is_string) {
        e.name = v.string_value();
      } else if (key == "address" && is_string) {
        e.address = v.string_value();
      } else if (key == "tls" && v.kind_case() == google::protobuf::Value::kBoolValue) {
        e.tls = v.bool_value();
      } else if (key == "ca_file" && is_string) {
        e.ca_file = ExpandHome(v.string_value());
      } else if (key == "cert_file" && is_string) {
        e.cert_file = ExpandHome(v.string_value());
      } else if (key == "key_file" && is_string) {
        e.key_file = ExpandHome(v.string_value());
      } else if (key == "token" && is_string) {
        e.token = v.string_value();
      } else if (key == "token_file" && is_string) {
        auto token = ReadText(v.string_value());
        if (!token.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ".token_file: ", token.status().message()));
        e.token = std::string(absl::StripAsciiWhitespace(*token));
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ".", key, ": unknown setting or wrong type"));
      }
    }
    if (e.address.empty()) return absl::InvalidArgumentError(where + ".address: required");
    if (e.name.empty()) e.name = e.address;
    // A file named but unreadable is an error now, not a silent fallback to
    // the system roots (or to no client certificate) at dial time.
    for (auto [field, file, pem] : {std::tuple<const char*, const std::string*, std::string*>{
                                        "ca_file", &e.ca_file, &e.ca_pem},
                                    {"cert_file", &e.cert_file, &e.cert_pem},
                                    {"key_file", &e.key_file, &e.key_pem}}) {
      if (file->empty()) continue;
      auto text = ReadText(*file);
      if (!text.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ".", field, ": ", text.status().message()));
      }
      *pem = std::move(*text);
    }
    if (e.cert_file.empty() != e.key_file.empty()) {
      return absl::InvalidArgumentError(where + ": cert_file and key_file go together");
    }
    if ((!e.ca_file.empty() || !e.cert_file.empty()) && !e.tls) {
      return absl::InvalidArgumentError(where + ": ca_file, cert_file and key_file need tls: true");
    }
    if (!e.token.empty() && !e.tls && !IsLoopbackAddress(e.address)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": a token for ", e.address,
          " would cross the network in plaintext; set \"tls\": true for this host"));
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

absl::StatusOr<std::vector<HostEntry>> ResolveHosts(const std::vector<std::string>& flags,
                                                    bool all_fleet) {
  std::vector<HostEntry> fleet;
  const std::string fleet_path = DefaultFleetPath();
  if (auto read = ReadFleet(fleet_path); read.ok()) {
    fleet = std::move(*read);
  } else if (read.status().code() != absl::StatusCode::kNotFound) {
    return read.status();
  }
  std::vector<std::string> wanted = flags;
  if (wanted.empty()) {
    if (const char* env = std::getenv("GPUBENCH_HOST"); env && *env) {
      wanted = absl::StrSplit(env, ',', absl::SkipWhitespace());
    }
  }
  if (wanted.empty()) {
    if (fleet.empty()) {
      std::vector<HostEntry> local(1);
      local[0].name = local[0].address = kDefaultAddress;
      return local;
    }
    if (!all_fleet) fleet.resize(1);
    return fleet;
  }
  std::vector<HostEntry> out;
  for (const std::string& w : wanted) {
    const std::string name(absl::StripAsciiWhitespace(w));
    bool found = false;
    for (const HostEntry& e : fleet) {
      if (e.name == name || e.address == name) {
        out.push_back(e);
        found = true;
        break;
      }
    }
    if (found) continue;
    // NAME=ADDRESS names an address not in the fleet file.
    const size_t eq = name.find('=');
    const bool named = eq != std::string::npos && eq > 0 && name.find(':') > eq;
    const std::string address = named ? name.substr(eq + 1) : name;
    if (address.find(':') == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--host: \"", name, "\" is neither host:port, NAME=host:port nor a name in ",
          fleet_path));
    }
    HostEntry& host = out.emplace_back();
    host.name = named ? name.substr(0, eq) : address;
    host.address = address;
  }
  return out;
}

std::shared_ptr<grpc::Channel> Dial(const HostEntry& host) {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (host.tls) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = host.ca_pem;
    options.pem_cert_chain = host.cert_pem;
    options.pem_private_key = host.key_pem;
    credentials = grpc::SslCredentials(options);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(host.address, credentials, args);
}

void PrepareCall(const HostEntry& host, int deadline_s, grpc::ClientContext* context) {
  if (deadline_s > 0) {
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(deadline_s));
  }
  // Never a token in plaintext beyond this machine (ReadFleet refuses such
  // an entry; this holds for hosts built any other way too).
  if (!host.token.empty() && (host.tls || IsLoopbackAddress(host.address))) {
    context->AddMetadata("authorization", "Bearer " + host.token);
  }
}

}  // namespace gpubench::client
