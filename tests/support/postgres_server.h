// A real PostgreSQL server for a test: initdb into a fresh folder and
// pg_ctl start on a Unix socket only (no TCP port to collide), stopped when
// the object goes. As root it runs as the `postgres` user that Debian's
// package makes, for the server refuses root. Test-only.
#ifndef GPUBENCH_TESTS_SUPPORT_POSTGRES_SERVER_H_
#define GPUBENCH_TESTS_SUPPORT_POSTGRES_SERVER_H_

#include <glob.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "tests/support/command.h"

namespace gpubench::testing_support {

class PostgresServer {
 public:
  // Its data and socket go to a fresh folder under /tmp: short (a socket
  // path holds at most 107 bytes), and one the `postgres` user can reach
  // when the test's own temporary folder is private to root.
  PostgresServer() {
    char dir[] = "/tmp/gpubench-pg-XXXXXX";
    if (mkdtemp(dir) == nullptr) {
      log_ = "cannot make a folder under /tmp";
      return;
    }
    dir_ = dir;
    glob_t found{};
    if (glob("/usr/lib/postgresql/*/bin/pg_ctl", 0, nullptr, &found) == 0 &&
        found.gl_pathc > 0) {
      const std::string ctl = found.gl_pathv[found.gl_pathc - 1];  // the newest
      bin_ = ctl.substr(0, ctl.size() - 6);
    }
    globfree(&found);
    if (bin_.empty()) {
      log_ = "no PostgreSQL server (Debian's postgresql package) under /usr/lib/postgresql";
      return;
    }
    as_ = getuid() == 0 ? "runuser -u postgres -- " : "";
    if (getuid() == 0) RunCommand("chown postgres '" + dir_ + "'");
    CommandResult init = RunCommand(as_ + bin_ + "initdb -A trust -U gpubench -D '" + dir_ +
                                    "/data'");
    CommandResult start = RunCommand(as_ + bin_ + "pg_ctl -w -D '" + dir_ + "/data' -l '" +
                                     dir_ + "/log' -o \"-k '" + dir_ +
                                     "' -p 5432 -c listen_addresses=''\" start");
    started_ = init.exit_code == 0 && start.exit_code == 0;
    log_ = init.output + start.output;
  }
  ~PostgresServer() {
    if (started_) RunCommand(as_ + bin_ + "pg_ctl -D '" + dir_ + "/data' -m immediate stop");
    if (!dir_.empty()) RunCommand("rm -rf '" + dir_ + "'");
  }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  bool started() const { return started_; }
  const std::string& log() const { return log_; }
  // libpq's URL of the server's postgres database.
  std::string url() const { return "postgresql://gpubench@/postgres?host=" + dir_ + "&port=5432"; }
  // psql's unaligned, tuples-only answer to sql.
  CommandResult Query(const std::string& sql) const {
    return RunCommand("psql -X -At '" + url() + "' -c \"" + sql + "\"");
  }

 private:
  std::string dir_, bin_, as_, log_;
  bool started_ = false;
};

}  // namespace gpubench::testing_support

#endif  // GPUBENCH_TESTS_SUPPORT_POSTGRES_SERVER_H_
