// rdzv-test-client: one or more rendezvous participants in one process, driven by the env
// contract (Options::from_env). Integration tests and the Slurm end-to-end tests launch it and
// read its stdout, one line per fact:
//   rank=R world=W round=N local_rank=L node_rank=K master=HOST   after the join
//   barrier rank=R ok                                              after the store barrier
//   event=KIND rank=R round=N self=S detail=TEXT                   session events while holding
//   left rank=R                                                    after a graceful leave
// Errors go to stderr as "rdzv-test-client: <code>: <message>" with exit status 1; usage
// errors exit 2.
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "llmrdzv/client/client.hpp"

namespace {

using namespace llmrdzv::client;

struct Flags {
  int participants = 1;
  int first_rank = -1;  // with several participants: requested ranks first_rank + i
  std::chrono::milliseconds hold{0};
  std::chrono::milliseconds barrier_timeout{60'000};
  bool leave = true;
};

constexpr const char* kUsage =
    "usage: rdzv-test-client [--participants K] [--first-rank R] [--hold-ms MS]\n"
    "                        [--barrier-timeout-ms MS] [--no-leave]\n"
    "Joins the rendezvous named by RDZV_ENDPOINT/RDZV_ID/RDZV_TOKEN (+ WORLD_SIZE, SLURM_PROCID,\n"
    "LOCAL_RANK, LLM_RDZV_*), prints the assignment, runs a store barrier, optionally holds the\n"
    "session for MS (printing events; a failure event ends the hold), then leaves.\n";

std::mutex output_mutex;

void print_line(const std::string& line) {
  std::lock_guard lock(output_mutex);
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "rdzv-test-client: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

long parse_number(const char* flag, const char* text) {
  long value = 0;
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, value);
  if (*text == '\0' || ec != std::errc() || ptr != end || value < 0) {
    usage_error(std::string(flag) + " needs a non-negative integer, got '" + text + "'");
  }
  return value;
}

Flags parse_flags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (flag == "--no-leave") {
      flags.leave = false;
      continue;
    }
    if (i + 1 >= argc) usage_error("unknown flag or missing value: " + flag);
    const long value = parse_number(argv[i], argv[i + 1]);
    ++i;
    if (flag == "--participants" && value >= 1) {
      flags.participants = int(value);
    } else if (flag == "--first-rank") {
      flags.first_rank = int(value);
    } else if (flag == "--hold-ms") {
      flags.hold = std::chrono::milliseconds(value);
    } else if (flag == "--barrier-timeout-ms") {
      flags.barrier_timeout = std::chrono::milliseconds(value);
    } else {
      usage_error("unknown flag or bad value: " + flag);
    }
  }
  return flags;
}

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? name : "localhost";
}

bool ends_the_round(SessionEvent::Kind kind) {
  return kind == SessionEvent::Kind::member_failed || kind == SessionEvent::Kind::round_closed ||
         kind == SessionEvent::Kind::shutdown || kind == SessionEvent::Kind::stream_lost;
}

// One participant: join, report, barrier, hold, leave. Returns false on error (already printed).
bool run_participant(Options options, const Flags& flags) {
  try {
    Client client(std::move(options));
    std::mutex mutex;
    std::condition_variable round_over;
    bool over = false;
    std::int32_t self = -1;
    const Assignment assignment = client.join([&](const SessionEvent& event) {
      std::lock_guard lock(mutex);
      print_line("event=" + std::string(event_kind_name(event.kind)) + " rank=" + std::to_string(event.rank) +
                 " round=" + std::to_string(event.round) + " self=" + std::to_string(self) + " detail=" + event.detail);
      if (ends_the_round(event.kind)) {
        over = true;
        round_over.notify_all();
      }
    });
    {
      std::lock_guard lock(mutex);
      self = assignment.rank;
    }
    print_line("rank=" + std::to_string(assignment.rank) + " world=" + std::to_string(assignment.world_size) +
               " round=" + std::to_string(assignment.round) + " local_rank=" + std::to_string(assignment.local_rank) +
               " node_rank=" + std::to_string(assignment.node_rank) + " master=" + assignment.master_host);
    client.kv(assignment.round).barrier("rdzv-test-client/barrier", assignment.world_size, flags.barrier_timeout);
    print_line("barrier rank=" + std::to_string(assignment.rank) + " ok");
    bool round_ended = false;
    {
      std::unique_lock lock(mutex);
      round_ended = round_over.wait_for(lock, flags.hold, [&] { return over; });
    }
    if (flags.leave && !round_ended) {
      client.leave();
      print_line("left rank=" + std::to_string(assignment.rank));
    }
    return true;
  } catch (const RdzvError& error) {
    std::lock_guard lock(output_mutex);
    std::fprintf(stderr, "rdzv-test-client: %s: %s\n", std::string(error_code_name(error.code())).c_str(),
                 error.what());
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = parse_flags(argc, argv);
  Options base;
  try {
    base = Options::from_env();
  } catch (const RdzvError& error) {
    std::fprintf(stderr, "rdzv-test-client: %s\n", error.what());
    return 2;
  }
  if (flags.participants == 1) return run_participant(base, flags) ? 0 : 1;

  std::vector<std::thread> threads;
  std::vector<char> ok(std::size_t(flags.participants), 0);
  for (int i = 0; i < flags.participants; ++i) {
    Options options = base;
    options.participant_id = host_name() + ":" + std::to_string(getpid()) + ":" + std::to_string(i);
    options.requested_rank = flags.first_rank >= 0 ? flags.first_rank + i : -1;
    threads.emplace_back([&ok, i, options, &flags] { ok[std::size_t(i)] = run_participant(options, flags); });
  }
  for (auto& thread : threads) thread.join();
  for (char participant_ok : ok) {
    if (!participant_ok) return 1;
  }
  return 0;
}
