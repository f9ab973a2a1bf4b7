// Launching and stopping a daemon the way the plugin launches rdzvd: real processes, a real
// privilege drop (as root), the port reported over an inherited pipe (descriptor 3), and each
// failure's message. The "daemons" are small shell programs that honour the same handshake, so
// each failure can be produced.
#include <catch2/catch.hpp>

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "rdzvd_launch.hpp"
#include "scratch_dir.hpp"
#include "site_secret.hpp"

using namespace llmrdzv;
using namespace llmrdzv::spank;
using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

LaunchSpec shell_daemon(const ScratchDir& dir, const std::string& script) {
  LaunchSpec spec;
  spec.program = "/bin/sh";
  spec.args = {"-c", script, "sh"};
  spec.token = "secret-token";
  spec.user = {getuid(), getgid(), {}};
  spec.log_path = dir.file("daemon.log");
  spec.start_timeout = std::chrono::milliseconds(3000);
  return spec;
}

std::string status_field(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return line.substr(field.size() + 1);
  }
  return {};
}

bool running(pid_t pid) { return kill(pid, 0) == 0; }

}  // namespace

TEST_CASE("the daemon counts as started once it reports a port on descriptor 3") {
  ScratchDir dir("spank-launch");
  // Written in two pieces: the launcher reads until the line is whole.
  LaunchSpec spec = shell_daemon(dir, "echo \"token=$LLM_RDZV_TOKEN\"; ls /proc/self/fd; sleep 0.2; printf '0.0.0.0:' >&3; "
                                      "sleep 0.2; echo 20123 >&3; exec 3>&-; exec sleep 30");
  const RunningDaemon daemon = start_daemon(spec);
  CHECK(daemon.port == 20123);
  CHECK(running(daemon.pid));
  // The token reaches the daemon through its environment, not its command line.
  std::ifstream cmdline("/proc/" + std::to_string(daemon.pid) + "/cmdline");
  std::string args((std::istreambuf_iterator<char>(cmdline)), {});
  CHECK(args.find("secret-token") == std::string::npos);
  stop_daemon(daemon, std::chrono::milliseconds(2000));
  CHECK_FALSE(running(daemon.pid));
  // The daemon inherited stdin, stdout, stderr and the port pipe (3), nothing else (ls's own
  // directory handle shows as 4).
  const std::string log = read_file(dir / "daemon.log");
  CHECK(log == "token=secret-token\n0\n1\n2\n3\n4\n");
}

TEST_CASE("the daemon gets the token and a fixed PATH and only the variables the starter names") {
  ScratchDir dir("spank-launch");
  ::setenv("LLM_RDZV_TEST_NAMED", "lib/one:lib/two", 1);
  ::setenv("LLM_RDZV_TEST_UNNAMED", "private", 1);
  ::unsetenv("LLM_RDZV_TEST_NAMED_UNSET");
  LaunchSpec spec = shell_daemon(dir, "env | LC_ALL=C sort > " + dir.file("env") + "; echo 20124 >&3; exec sleep 30");
  spec.pass_environment = {"LLM_RDZV_TEST_NAMED", "LLM_RDZV_TEST_NAMED_UNSET"};
  const RunningDaemon daemon = start_daemon(spec);
  stop_daemon(daemon, std::chrono::milliseconds(2000));
  ::unsetenv("LLM_RDZV_TEST_NAMED");
  ::unsetenv("LLM_RDZV_TEST_UNNAMED");
  // sh adds PWD (and may add SHLVL and _) itself; everything else came from the launcher.
  std::string from_launcher;
  std::istringstream lines(read_file(dir / "env"));
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("PWD=") && !line.starts_with("SHLVL=") && !line.starts_with("_=")) from_launcher += line + "\n";
  }
  CHECK(from_launcher ==
        "LLM_RDZV_TEST_NAMED=lib/one:lib/two\nLLM_RDZV_TOKEN=secret-token\nPATH=/usr/local/bin:/usr/bin:/bin\n");
}

TEST_CASE("the daemon runs as the job's user, not as root") {
  if (getuid() != 0) return;  // only root can switch users; the Slurm suite runs as root
  const passwd* nobody = getpwnam("nobody");
  REQUIRE(nobody != nullptr);
  ScratchDir dir("spank-launch");
  fs::permissions(dir.path(), fs::perms::all);  // the daemon, as nobody, creates its log here
  LaunchSpec spec = shell_daemon(dir, "echo 20001 >&3; exec sleep 30");
  spec.user = {nobody->pw_uid, nobody->pw_gid, {}};
  const RunningDaemon daemon = start_daemon(spec);
  const std::string uids = status_field(daemon.pid, "Uid");
  const std::string id = std::to_string(nobody->pw_uid);
  CHECK(uids == "\t" + id + "\t" + id + "\t" + id + "\t" + id);
  CHECK(status_field(daemon.pid, "Groups").find_first_not_of(" \t") == std::string::npos);
  stop_daemon(daemon, std::chrono::milliseconds(2000));
  CHECK_FALSE(running(daemon.pid));
}

TEST_CASE("a daemon that ignores SIGTERM is killed after the grace period") {
  ScratchDir dir("spank-launch");
  LaunchSpec spec = shell_daemon(dir, "trap '' TERM; echo 20002 >&3; while :; do sleep 0.05; done");
  const RunningDaemon daemon = start_daemon(spec);
  const auto start = std::chrono::steady_clock::now();
  stop_daemon(daemon, std::chrono::milliseconds(300));
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(300));
  CHECK_FALSE(running(daemon.pid));
}

TEST_CASE("at the step's end the daemon is asked to drain (SIGUSR1), and stopped if it does not") {
  ScratchDir dir("spank-launch");
  const RunningDaemon draining =
      start_daemon(shell_daemon(dir, "trap 'exit 0' USR1; echo 20005 >&3; while :; do sleep 0.05; done"));
  auto start = std::chrono::steady_clock::now();
  finish_daemon(draining, std::chrono::milliseconds(5000), std::chrono::milliseconds(300));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2000));
  CHECK_FALSE(running(draining.pid));
  LaunchSpec stubborn_spec = shell_daemon(dir, "trap '' USR1; echo 20006 >&3; while :; do sleep 0.05; done");
  stubborn_spec.log_path = dir.file("stubborn.log");  // each daemon creates its own log
  const RunningDaemon stubborn = start_daemon(stubborn_spec);
  start = std::chrono::steady_clock::now();
  finish_daemon(stubborn, std::chrono::milliseconds(400), std::chrono::milliseconds(300));
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(400));
  CHECK_FALSE(running(stubborn.pid));
}

TEST_CASE("start failures say why") {
  ScratchDir dir("spank-launch");
  SECTION("missing program") {
    LaunchSpec spec = shell_daemon(dir, "");
    spec.program = dir.file("no-rdzvd");
    CHECK_THROWS_WITH(start_daemon(spec), Contains("rdzvd could not be executed (" + spec.program));
  }
  SECTION("early exit") {
    CHECK_THROWS_WITH(start_daemon(shell_daemon(dir, "echo bind failed >&2; exit 3")),
                      Contains("rdzvd exited with status 3 (see " + dir.file("daemon.log")));
    CHECK(read_file(dir / "daemon.log") == "bind failed\n");
  }
  SECTION("no port within the start timeout") {
    LaunchSpec spec = shell_daemon(dir, "echo $$ > " + dir.file("pid") + "; exec sleep 30");
    spec.start_timeout = std::chrono::milliseconds(300);
    CHECK_THROWS_WITH(start_daemon(spec), Contains("rdzvd did not report a listening port within 300 ms"));
    const pid_t pid = std::stoi(read_file(dir / "pid"));
    CHECK_FALSE(running(pid));
  }
  SECTION("a log directory that does not exist: the errno and how to make it") {
    LaunchSpec spec = shell_daemon(dir, "exit 0");
    spec.log_path = dir.file("missing-dir/log");
    CHECK_THROWS_WITH(start_daemon(spec), Contains("could not create its log file " + spec.log_path) &&
                                              Contains("No such file or directory") &&
                                              Contains("does not exist: create it on every node"));
  }
  SECTION("the daemon's own reason comes over the port pipe") {
    CHECK_THROWS_WITH(
        start_daemon(shell_daemon(dir, "echo 'error: --listen: could not bind 0.0.0.0 on any of the ports 1,2' >&3; exit 2")),
        Contains("rdzvd could not start: --listen: could not bind 0.0.0.0 on any of the ports 1,2"));
  }
  SECTION("a report that is no port") {
    CHECK_THROWS_WITH(start_daemon(shell_daemon(dir, "echo listening >&3; exec sleep 30")),
                      Contains("rdzvd reported 'listening', which is not a port"));
  }
  SECTION("a flood instead of a port") {
    CHECK_THROWS_WITH(start_daemon(shell_daemon(dir, "yes 1 | tr -d '\\n' >&3")),
                      Contains("rdzvd reported more than 64 bytes instead of a port"));
  }
}

TEST_CASE("a log name planted in a shared log directory is refused, never followed or appended to") {
  ScratchDir dir("spank-launch");
  const std::string precious = dir.write("bashrc", "export PATH=/usr/bin\n");
  SECTION("a symlink to another file") {
    LaunchSpec spec = shell_daemon(dir, "echo 20003 >&3; echo evil; exec sleep 30");
    fs::create_symlink(precious, spec.log_path);
    CHECK_THROWS_WITH(start_daemon(spec), Contains("could not create its log file " + spec.log_path) &&
                                              Contains("a file or a symbolic link planted"));
  }
  SECTION("an existing file") {
    LaunchSpec spec = shell_daemon(dir, "echo 20004 >&3; echo evil; exec sleep 30");
    fs::copy_file(precious, spec.log_path);
    CHECK_THROWS_WITH(start_daemon(spec), Contains("could not create its log file"));
    CHECK(read_file(spec.log_path) == "export PATH=/usr/bin\n");
  }
  CHECK(read_file(precious) == "export PATH=/usr/bin\n");
}

TEST_CASE("rdzvd's command line carries the step and the site's timings") {
  SiteConfig site;
  site.heartbeat_interval_ms = 200;
  site.heartbeat_timeout_ms = 2000;
  site.log_level = "debug";
  StepSettings settings;
  settings.ports = {20000, 20999};
  const StepLayout layout{.job_id = 12, .step_id = 0, .nnodes = 2, .node_id = 0, .ntasks = 8, .local_tasks = 4};
  const auto args = rdzvd_arguments(site, settings, layout, "12.0", 20500);
  const std::vector<std::string> expected = {
      "--listen", "0.0.0.0:20500", "--port-range", "20000-20999", "--port-probes", "8",
      "--mode", "step", "--rdzv-id", "12.0", "--participants", "8:8", "--exit-with-parent",
      "--heartbeat-interval", "200", "--heartbeat-timeout", "2000", "--log-level", "debug"};
  CHECK(args == expected);
}

TEST_CASE("the site secret must be private to its owner") {
  ScratchDir dir("spank-launch");
  const auto path = dir.file("secret");
  { std::ofstream(path) << "s3cret \t\n"; }
  chmod(path.c_str(), 0600);
  CHECK(read_site_secret(path, getuid()) == "s3cret");
  chmod(path.c_str(), 0640);
  CHECK_THROWS_WITH(read_site_secret(path, getuid()), Contains("no group or other permissions"));
  chmod(path.c_str(), 0600);
  CHECK_THROWS_WITH(read_site_secret(path, getuid() + 1), Contains("must be owned by uid"));
  CHECK_THROWS_WITH(read_site_secret(dir.file("none"), getuid()), Contains("No such file"));
  { std::ofstream(path) << "\n"; }
  CHECK_THROWS_WITH(read_site_secret(path, getuid()), Contains("empty"));
}
