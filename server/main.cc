// gpubenchd: the daemon. See README.md.
//   gpubenchd [--listen 127.0.0.1:50051]
#include <grpcpp/grpcpp.h>

#include <csignal>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "server/service.h"

namespace {
grpc::Server* g_server = nullptr;
void OnSignal(int) {
  // Shutdown from a signal handler is not async-signal-safe; a thread does it.
  std::thread([] { if (g_server) g_server->Shutdown(); }).detach();
}
}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:50051";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
      listen = argv[++i];
    } else {
      std::cerr << "usage: gpubenchd [--listen HOST:PORT]\n";
      return 2;
    }
  }
  gpubench::server::BenchServiceImpl service(gpubench::server::ProbeMachine(listen));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::cerr << "gpubenchd: cannot listen on " << listen << "\n";
    return 1;
  }
  g_server = server.get();
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::cerr << "gpubenchd: listening on " << listen << " (port " << port << ")\n";
  server->Wait();
  return 0;
}
