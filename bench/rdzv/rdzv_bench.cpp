// rdzv-bench: how long N participants, each with its own channel, take to complete a rendezvous
// round and then a store barrier, against an rdzvd it starts itself (or --endpoint). Prints a
// table and, as its last line, one JSON object. The baseline is N concurrent trivial calls in
// the same run, so ratios stay comparable across machines.
#include <absl/synchronization/mutex.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_daemon.hpp"
#include "participant_run.hpp"

namespace {

using llmrdzv::bench::BenchDaemon;

constexpr const char* kUsage =
    "usage: rdzv-bench --participants N [--endpoint HOST:PORT --id ID --token TOKEN]\n"
    "                  [--rdzvd PATH] [--timeout SECONDS] [--hold MS] [--barrier add-wait|rpc]\n"
    "                  [--protocol stream|calls] [--metrics-listen HOST:PORT]\n"
    "Without --endpoint, starts its own rdzvd (default: the rdzvd next to this binary) and\n"
    "reports its peak RSS. Needs about 2*N+100 open files (raise ulimit -n for large N).\n"
    "--hold MS pauses before and after the timed phase, announcing each on stderr (to profile\n"
    "rdzvd during the timed phase alone).\n"
    "--barrier: add-wait (default) passes the store barrier with Add, Set by the last arrival and\n"
    "Wait; rpc with one Barrier, as the client library's barrier() does.\n"
    "--protocol: stream (default, what the client library does with a daemon that advertises it)\n"
    "joins in the SessionOpen and makes the Wait or Barrier a SessionCall on the Session stream:\n"
    "one live call per participant; calls joins with Join, then opens the session, and makes\n"
    "Wait or Barrier their own calls (the library's path with older daemons).\n"
    "--metrics-listen: the rdzvd it starts serves /metrics there (to measure what scraping costs).\n";

struct BenchArgs {
  int participants = 0;
  std::string endpoint, rdzv_id, token, rdzvd_path, metrics_listen;
  int timeout_s = 120;
  int hold_ms = 0;
  llmrdzv::bench::BarrierKind barrier = llmrdzv::bench::BarrierKind::add_wait;
  llmrdzv::bench::Protocol protocol = llmrdzv::bench::Protocol::stream;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "rdzv-bench: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

int positive(const std::string& flag, const std::string& text) {
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < 1) {
    usage_error(flag + " needs a positive integer, got '" + text + "'");
  }
  return value;
}

std::string default_rdzvd_path() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  return (self.parent_path() / "rdzvd").string();
}

BenchArgs parse_args(int argc, char** argv) {
  BenchArgs args;
  args.rdzvd_path = default_rdzvd_path();
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) usage_error(flag + " needs a value (or is unknown)");
    const std::string value = argv[++i];
    if (flag == "--participants") {
      args.participants = positive(flag, value);
    } else if (flag == "--endpoint") {
      args.endpoint = value;
    } else if (flag == "--id") {
      args.rdzv_id = value;
    } else if (flag == "--token") {
      args.token = value;
    } else if (flag == "--rdzvd") {
      args.rdzvd_path = value;
    } else if (flag == "--metrics-listen") {
      args.metrics_listen = value;
    } else if (flag == "--timeout") {
      args.timeout_s = positive(flag, value);
    } else if (flag == "--hold") {
      args.hold_ms = positive(flag, value);
    } else if (flag == "--barrier") {
      if (value != "add-wait" && value != "rpc") usage_error("--barrier is add-wait or rpc, got '" + value + "'");
      args.barrier = value == "rpc" ? llmrdzv::bench::BarrierKind::rpc : llmrdzv::bench::BarrierKind::add_wait;
    } else if (flag == "--protocol") {
      if (value != "stream" && value != "calls") usage_error("--protocol is stream or calls, got '" + value + "'");
      args.protocol = value == "stream" ? llmrdzv::bench::Protocol::stream : llmrdzv::bench::Protocol::calls;
    } else {
      usage_error("unknown flag " + flag);
    }
  }
  if (args.participants == 0) usage_error("--participants is required");
  if (!args.endpoint.empty() && !args.metrics_listen.empty()) {
    usage_error("--metrics-listen is for the rdzvd rdzv-bench starts, not with --endpoint");
  }
  if (!args.endpoint.empty() && (args.rdzv_id.empty() || args.token.empty())) {
    usage_error("--endpoint needs --id and --token");
  }
  return args;
}

double percentile(std::vector<double> values, double fraction) {
  std::sort(values.begin(), values.end());
  const auto index = std::size_t(fraction * double(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

std::string json_number(std::optional<double> value) {
  if (!value) return "null";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f", *value);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const BenchArgs args = parse_args(argc, argv);
  // This process plays thousands of ranks: keep its own overhead out of the measurement with the
  // process settings rdzvd uses (rdzvd/server/tuning.cpp): no absl deadlock detector (Debian's
  // abseil has it on), one malloc arena.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  mallopt(M_ARENA_MAX, 1);
  try {
    std::unique_ptr<BenchDaemon> daemon;
    llmrdzv::bench::RunConfig config{args.participants, args.endpoint, args.rdzv_id, args.token,
                                     std::chrono::seconds(args.timeout_s)};
    config.hold = std::chrono::milliseconds(args.hold_ms);
    config.barrier = args.barrier;
    config.protocol = args.protocol;
    if (args.endpoint.empty()) {
      config.rdzv_id = "bench." + std::to_string(getpid());
      daemon = std::make_unique<BenchDaemon>(args.rdzvd_path, config.rdzv_id, args.metrics_listen);
      config.endpoint = daemon->endpoint();
      config.token = daemon->token();
      config.daemon_pid = daemon->pid();
    }
    const auto result = llmrdzv::bench::run_participants(config);
    const std::optional<double> rss = daemon ? llmrdzv::bench::peak_rss_mib(daemon->pid()) : std::nullopt;

    const double p50 = percentile(result.total_ms, 0.50);
    const double p99 = percentile(result.total_ms, 0.99);
    const double join_p50 = percentile(result.join_ms, 0.50);
    const double baseline_p50 = percentile(result.baseline_ms, 0.50);
    const double ratio = result.wall_ms / std::max(result.baseline_wall_ms, 0.001);
    const char* protocol = args.protocol == llmrdzv::bench::Protocol::stream ? "stream" : "calls";
    std::printf("rdzv-bench: %d participants, each with its own channel, against rdzvd %s (protocol %s)\n",
                args.participants, config.endpoint.c_str(), protocol);
    std::printf("%-34s %12s %12s %12s\n", "phase", "p50_ms", "p99_ms", "wall_ms");
    std::printf("%-34s %12s %12s %12.1f\n", "connect (not timed)", "-", "-", result.connect_wall_ms);
    std::printf("%-34s %12.2f %12.2f %12.1f\n", "baseline: one trivial call each", baseline_p50,
                percentile(result.baseline_ms, 0.99), result.baseline_wall_ms);
    std::printf("%-34s %12.2f %12.2f %12s\n", "join (round complete)", join_p50, percentile(result.join_ms, 0.99), "-");
    std::printf("%-34s %12.2f %12.2f %12s\n", "+ session open (OPENED read)", percentile(result.opened_ms, 0.50),
                percentile(result.opened_ms, 0.99), "-");
    if (args.barrier == llmrdzv::bench::BarrierKind::add_wait) {
      std::printf("%-34s %12.2f %12.2f %12s\n", "+ add", percentile(result.added_ms, 0.50),
                  percentile(result.added_ms, 0.99), "-");
    }
    std::printf("%-34s %12.2f %12.2f %12.1f\n", "join + store barrier", p50, p99, result.wall_ms);
    std::printf("%-34s %12s %12s %12.1f\n", "leave (all MEMBER_LEFT read)", "-", "-", result.leave_wall_ms);
    std::printf("round+barrier / baseline wall time: %.2fx\n", ratio);
    std::printf("CPU during round+barrier: rdzvd %s ms, participants (this process) %.1f ms\n",
                json_number(result.daemon_cpu_ms).c_str(), result.client_cpu_ms);
    std::printf("CPU during leave: rdzvd %s ms for %d MEMBER_LEFT events\n",
                json_number(result.leave_daemon_cpu_ms).c_str(), result.member_left_events);
    std::printf("rdzvd peak RSS (VmHWM): %s MiB\n", json_number(rss).c_str());
    std::printf(
        "{\"participants\": %d, \"protocol\": \"%s\", \"barrier\": \"%s\", \"total_ms\": %.2f, \"p50_ms\": %.2f, \"p99_ms\": %.2f, \"join_p50_ms\": %.2f, "
        "\"baseline_ms\": %.2f, \"ratio_to_baseline\": %.2f, \"connect_ms\": %.2f, \"rdzvd_cpu_ms\": %s, "
        "\"client_cpu_ms\": %.2f, \"leave_ms\": %.2f, \"leave_rdzvd_cpu_ms\": %s, \"member_left_events\": %d, "
        "\"rdzvd_rss_mib\": %s}\n",
        args.participants, protocol, args.barrier == llmrdzv::bench::BarrierKind::rpc ? "rpc" : "add-wait", result.wall_ms, p50, p99, join_p50, result.baseline_wall_ms, ratio, result.connect_wall_ms,
        json_number(result.daemon_cpu_ms).c_str(), result.client_cpu_ms, result.leave_wall_ms,
        json_number(result.leave_daemon_cpu_ms).c_str(), result.member_left_events, json_number(rss).c_str());
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "rdzv-bench: %s\n", error.what());
    return 1;
  }
}
