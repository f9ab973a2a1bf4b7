// rdzv-impostor: an attacker for the security tests on the test cluster, run as a second
// unprivileged user on a step's node. It squats ADDR:PORT as a raw TCP listener that never
// answers (raw), a fake rdzvd that answers OK to everything (fake), or a fake that relays Hello to
// the real daemon (relay). It prints "listening PORT" once ready and, on SIGTERM or SIGINT, writes
// every byte it received to FILE and the gRPC methods called to FILE.methods, one per line.
// --kind flood instead sends CALLS concurrent Set calls of MIB MiB with a forged ticket to the
// rdzvd at HOST:PORT (forged_set_flood) and prints how they ended, one "code count" line each.
// --kind idle opens COUNT TCP connections to HOST:PORT that never send a byte, prints after a
// second "held H closed C (the oldest O in a row)" (how many the daemon has closed, and how many
// of those were the first ones opened), and holds the rest until SIGTERM.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "impostors.hpp"

namespace {

int usage(const char* problem) {
  std::fprintf(stderr,
               "rdzv-impostor: %s\n"
               "usage: rdzv-impostor --kind raw|fake|relay --listen ADDR:PORT [--relay-to HOST:PORT] --loot FILE\n"
               "       rdzv-impostor --kind flood --target HOST:PORT --id ID [--calls N] [--mib M] [--forged-metadata yes|no]\n"
               "       rdzv-impostor --kind idle --target HOST:PORT --count N\n",
               problem);
  return 2;
}

void save(const llmrdzv::testing::Loot& loot, const std::string& file) {
  std::ofstream(file, std::ios::binary) << loot.bytes();
  std::ofstream methods(file + ".methods");
  for (const auto& method : loot.methods()) methods << method << '\n';
}

}  // namespace

// The flood: how its calls ended, e.g. "PERMISSION_DENIED 48" and the first message of each code.
int flood(const std::string& target, const std::string& rdzv_id, int calls, int mib, bool forged_metadata) {
  const auto statuses = llmrdzv::testing::forged_set_flood(target, rdzv_id, calls, std::size_t(mib) << 20,
                                                           forged_metadata, std::chrono::seconds(60));
  std::map<int, std::pair<int, std::string>> by_code;
  for (const auto& status : statuses) {
    auto& [count, message] = by_code[int(status.error_code())];
    if (count++ == 0) message = status.error_message();
  }
  for (const auto& [code, seen] : by_code) std::printf("code %d count %d first: %s\n", code, seen.first, seen.second.c_str());
  return 0;
}

int main(int argc, char** argv) {
  std::string kind, listen, relay_to, loot_file, target, rdzv_id, calls = "48", mib = "63", forged_metadata = "no",
      count = "1000";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--kind") kind = value;
    else if (flag == "--listen") listen = value;
    else if (flag == "--relay-to") relay_to = value;
    else if (flag == "--loot") loot_file = value;
    else if (flag == "--target") target = value;
    else if (flag == "--id") rdzv_id = value;
    else if (flag == "--calls") calls = value;
    else if (flag == "--mib") mib = value;
    else if (flag == "--forged-metadata") forged_metadata = value;
    else if (flag == "--count") count = value;
    else return usage(("unknown flag " + flag).c_str());
  }
  if (argc % 2 == 0) return usage("every flag needs a value");
  if (kind == "flood") {
    if (target.empty() || rdzv_id.empty()) return usage("--kind flood needs --target HOST:PORT and --id ID");
    return flood(target, rdzv_id, std::stoi(calls), std::stoi(mib), forged_metadata == "yes");
  }
  const bool idle = kind == "idle";
  if (idle && target.empty()) return usage("--kind idle needs --target HOST:PORT");
  if (!idle && (listen.empty() || loot_file.empty())) return usage("--listen and --loot are required");
  if ((kind == "relay") != !relay_to.empty()) return usage("--relay-to goes with --kind relay, and only with it");
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);  // before any thread starts: all inherit it
  try {
    if (idle) {
      llmrdzv::testing::IdleConnections connections(target, std::stoi(count));
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const int closed = connections.closed_by_peer();
      std::printf("held %d closed %d (the oldest %d in a row)\n", connections.count() - closed, closed,
                  connections.oldest_closed_in_a_row());
      std::fflush(stdout);
      int signal = 0;
      sigwait(&stop_signals, &signal);
      return 0;
    }
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos) return usage("--listen must be ADDR:PORT");
    std::unique_ptr<llmrdzv::testing::RawSquatter> raw;
    std::unique_ptr<llmrdzv::testing::FakeDaemon> fake;
    std::uint16_t port = 0;
    if (kind == "raw") {
      port = std::uint16_t(std::stoul(listen.substr(colon + 1)));
      raw = std::make_unique<llmrdzv::testing::RawSquatter>(port, listen.substr(0, colon));
    } else if (kind == "fake" || kind == "relay") {
      fake = std::make_unique<llmrdzv::testing::FakeDaemon>(listen, relay_to);
      port = fake->port();
    } else {
      return usage("--kind must be raw, fake or relay");
    }
    std::printf("listening %u\n", unsigned(port));
    std::fflush(stdout);
    int signal = 0;
    sigwait(&stop_signals, &signal);
    save(raw ? raw->loot() : fake->loot(), loot_file);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rdzv-impostor: %s\n", e.what());
    return 1;
  }
  return 0;
}
