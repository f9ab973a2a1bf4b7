// Shared scaffolding for the core's unit tests: a core on a manual clock, and recorders for what
// blocked calls and sessions receive.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llmrdzv/common/token.hpp"
#include "llmrdzv/core/core.hpp"

namespace llmrdzv::core::testing {

struct JoinOutcome {
  bool done = false;
  int completions = 0;
  Status status;
  Assignment assignment;
};

struct KvOutcome {
  bool done = false;
  Status status;
  std::vector<std::string> values;
};

class RecordingSink final : public SessionSink {
 public:
  void send(const SessionEvent& event) override { events.push_back(event); }
  void finish(const Status& status) override { finished = status; }
  bool saw(EventKind kind) const {
    for (const auto& e : events)
      if (e.kind == kind) return true;
    return false;
  }
  std::vector<SessionEvent> events;
  std::optional<Status> finished;
};

// The daemon nonce of every test core, so that tests can compute tickets the way clients do.
inline const std::string kTestDaemonNonce(llmrdzv::kNonceBytes, 'n');

// The ticket a client holding `token` shows for `rdzv_id` after a handshake with a test core.
inline std::string ticket_for(const std::string& token, const std::string& rdzv_id) {
  return llmrdzv::client_ticket(token, rdzv_id, kTestDaemonNonce);
}

inline CoreConfig step_config() {
  CoreConfig config;
  config.auth.daemon_nonce = kTestDaemonNonce;
  config.auth.mode = Mode::step;
  config.auth.step_rdzv_id = "42.0";
  config.auth.step_token = "step-token-secret";
  config.settings.heartbeat_interval = Millis(1000);
  config.settings.heartbeat_timeout = Millis(5000);
  config.settings.last_call = Millis(2000);
  config.settings.join_timeout = Millis(60000);
  config.settings.rendezvous_idle_timeout = Millis(600000);
  return config;
}

class CoreFixture {
 public:
  explicit CoreFixture(CoreConfig config = step_config())
      : config_(config), core(config, clock, [this](LogLevel, const std::string& line) { log.push_back(line); }) {}

  Scope scope() const {
    return {config_.auth.step_rdzv_id, ticket_for(config_.auth.step_token, config_.auth.step_rdzv_id)};
  }

  JoinRequest request(const std::string& participant, int min, int max, const std::string& host = "node0",
                      int requested_rank = -1, int local_rank = -1) const {
    JoinRequest r;
    r.scope = scope();
    r.participant_id = participant;
    r.host = host;
    r.requested_rank = requested_rank;
    r.local_rank = local_rank;
    r.min_participants = min;
    r.max_participants = max;
    return r;
  }

  std::shared_ptr<JoinOutcome> join(const JoinRequest& r, WaiterRef* ref = nullptr) {
    auto outcome = std::make_shared<JoinOutcome>();
    WaiterRef got = core.join(r, [outcome](const Status& s, const Assignment& a) {
      outcome->done = true;
      ++outcome->completions;
      outcome->status = s;
      outcome->assignment = a;
    });
    if (ref) *ref = got;
    return outcome;
  }

  // Joins n participants p0..p{n-1} of a fixed-size rendezvous of n; all must complete.
  std::vector<std::shared_ptr<JoinOutcome>> join_all(int n, int min = -1) {
    std::vector<std::shared_ptr<JoinOutcome>> outcomes;
    for (int i = 0; i < n; ++i) outcomes.push_back(join(request("p" + std::to_string(i), min < 0 ? n : min, n)));
    return outcomes;
  }

  static KvCallback record(const std::shared_ptr<KvOutcome>& outcome) {
    return [outcome](const Status& s, std::vector<std::string> values) {
      outcome->done = true;
      outcome->status = s;
      outcome->values = std::move(values);
    };
  }

  std::shared_ptr<RecordingSink> open(const std::string& participant, std::uint64_t round,
                                      std::uint64_t* session_id = nullptr) {
    auto sink = std::make_shared<RecordingSink>();
    auto opened = core.open_session(scope(), participant, round, sink);
    if (!opened.ok()) return nullptr;
    if (session_id) *session_id = opened.value();
    return sink;
  }

  void advance(Millis by) {
    clock.advance(by);
    core.tick();
  }

  CoreConfig config_;
  ManualClock clock;
  std::vector<std::string> log;
  Core core;
};

}  // namespace llmrdzv::core::testing
