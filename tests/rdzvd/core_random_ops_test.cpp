// The core under long random sequences of every call a client can make, in any order and with
// any arguments (wrong tickets, stale and future rounds, clashing ranges, bogus sessions,
// cancels of finished calls, time jumps past every timeout), checked against the rules that hold
// whatever happens: every blocked call completes exactly once (a call answered twice, or never,
// hangs or confuses a client), every round hands out ranks 0..world-1 once each to distinct
// participants, with world sizes inside the rendezvous' range and consistent node and local
// ranks, and shutdown answers everything still waiting. Seeded: a failure names its seed.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core_fixture.hpp"

using namespace llmrdzv::core;
using namespace llmrdzv::core::testing;

namespace {

struct JoinRecord {
  std::string participant;
  std::size_t incarnation = 0;  // of the rendezvous when the Join completed
  int min = 0;
  int max = 0;
  std::shared_ptr<JoinOutcome> outcome;
};

struct KvRecord {
  int completions = 0;
};

class RandomClient {
 public:
  RandomClient(CoreFixture& f, std::uint64_t seed) : f_(f), rng_(seed) {}

  void step() {
    step_once();
    // An idle rendezvous is dropped; a later Join makes it anew, with rounds from 1 again.
    if (f_.core.rendezvous_count() == 0 && had_rendezvous_) ++incarnation_;
    had_rendezvous_ = f_.core.rendezvous_count() != 0;
  }

  void step_once() {
    switch (pick(12)) {
      case 0: case 1: case 2: join(); break;
      case 3: f_.core.leave(scope(), participant()); break;
      case 4: open_session(); break;
      case 5: f_.core.heartbeat(sessions_.empty() || pick(8) == 0 ? pick(5) : sessions_[pick(sessions_.size())].first); break;
      case 6: close_session(); break;
      case 7: case 8: kv(); break;
      case 9: if (!waiters_.empty()) f_.core.cancel(waiters_[pick(waiters_.size())]); break;
      default: f_.advance(Millis(std::vector<int>{1, 100, 999, 2500, 6000, 70000}[pick(6)])); break;
    }
  }

  void check_final_state() {
    f_.core.shutdown("test over");
    for (const auto& j : joins_) {
      INFO("participant " << j.participant);
      CHECK(j.outcome->completions == 1);
    }
    for (const auto& k : kv_)
      CHECK(k->completions == 1);
    for (const auto& [sink, closed] : sinks_)
      if (!closed) CHECK(sink->finished.has_value());

    // A retried Join of a member gets its assignment again: one entry per participant.
    std::map<std::pair<std::size_t, std::uint64_t>, std::map<std::string, const JoinRecord*>> rounds;
    for (const auto& j : joins_) {
      if (!j.outcome->done || !j.outcome->status.ok()) continue;
      auto& members = rounds[{j.incarnation, j.outcome->assignment.round}];
      const auto [it, first_time] = members.emplace(j.participant, &j);
      if (!first_time) {
        INFO(j.participant << " joined round " << j.outcome->assignment.round << " again");
        CHECK(j.outcome->assignment.rank == it->second->outcome->assignment.rank);
        CHECK(j.outcome->assignment.world_size == it->second->outcome->assignment.world_size);
      }
    }
    for (const auto& [when, members] : rounds) {
      INFO("round " << when.second << " of rendezvous incarnation " << when.first);
      const Assignment& first = members.begin()->second->outcome->assignment;
      CHECK(static_cast<int>(members.size()) == first.world_size);
      std::set<int> ranks;
      std::set<int> nodes;
      for (const auto& [participant, m] : members) {
        const Assignment& a = m->outcome->assignment;
        CHECK(a.world_size == first.world_size);
        CHECK(a.num_nodes == first.num_nodes);
        CHECK(a.world_size >= m->min);
        CHECK(a.world_size <= m->max);
        CHECK((a.local_rank >= 0 && a.local_rank < a.local_world_size));
        CHECK((a.node_rank >= 0 && a.node_rank < a.num_nodes));
        ranks.insert(a.rank);
        nodes.insert(a.node_rank);
      }
      CHECK(static_cast<int>(ranks.size()) == first.world_size);
      CHECK(*ranks.begin() == 0);
      CHECK(*ranks.rbegin() == first.world_size - 1);
      CHECK(static_cast<int>(nodes.size()) == first.num_nodes);
    }
    completed_rounds = rounds.size();
  }

  std::size_t completed_rounds = 0;

 private:
  std::uint64_t pick(std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_); }
  Scope scope() {
    Scope s = f_.scope();
    if (pick(20) == 0) s.ticket = "forged";
    if (pick(40) == 0) s.rdzv_id = "other.0";
    return s;
  }
  std::string participant() { return "p" + std::to_string(pick(6)); }
  std::uint64_t round() {
    switch (pick(4)) {
      case 0: return 0;
      case 1: return last_round_;
      case 2: return last_round_ + 1;
      default: return pick(1000);
    }
  }
  std::string key() { return std::vector<std::string>{"a", "b", "rank/0", "", "store/x"}[pick(5)]; }
  std::uint32_t timeout() { return std::vector<std::uint32_t>{0, 1, 500, 30000}[pick(4)]; }

  void join() {
    static const std::vector<std::pair<int, int>> ranges = {{2, 2}, {1, 3}, {2, 4}, {3, 3}, {0, 2}, {3, 1}};
    const auto [min, max] = ranges[pick(ranges.size())];
    JoinRequest r = f_.request(participant(), min, max, "node" + std::to_string(pick(3)),
                               static_cast<int>(pick(7)) - 1, static_cast<int>(pick(5)) - 1);
    r.scope = scope();
    r.last_call_ms = std::vector<std::uint32_t>{0, 10, 5000}[pick(3)];
    r.timeout_ms = std::vector<std::uint32_t>{0, 50, 10000}[pick(3)];
    joins_.push_back(JoinRecord{r.participant_id, incarnation_, min, max, std::make_shared<JoinOutcome>()});
    auto outcome = joins_.back().outcome;
    const std::size_t index = joins_.size() - 1;
    const WaiterRef ref = f_.core.join(r, [this, outcome, index](const Status& s, const Assignment& a) {
      joins_[index].incarnation = incarnation_;
      outcome->done = true;
      ++outcome->completions;
      outcome->status = s;
      outcome->assignment = a;
      if (s.ok()) last_round_ = a.round;
    });
    if (ref.id != 0) waiters_.push_back(ref);
  }

  void open_session() {
    auto sink = std::make_shared<RecordingSink>();
    auto opened = f_.core.open_session(scope(), participant(), round(), sink);
    if (!opened.ok()) return;
    sessions_.emplace_back(opened.value(), sinks_.size());
    sinks_.emplace_back(sink, false);
  }

  void close_session() {
    if (sessions_.empty()) return;
    const auto [id, sink] = sessions_[pick(sessions_.size())];
    f_.core.close_session(id);
    sinks_[sink].second = true;  // the stream ended: the core owes it nothing more
  }

  KvCallback recorder() {
    auto record = std::make_shared<KvRecord>();
    kv_.push_back(record);
    return [record](const Status&, std::vector<std::string>) { ++record->completions; };
  }

  void kv() {
    const std::uint64_t r = round();
    WaiterRef ref;
    switch (pick(15)) {
      case 0: f_.core.set(scope(), r, key(), std::string(pick(3) * 7, 'v')); break;
      case 1: f_.core.add(scope(), r, key(), static_cast<std::int64_t>(pick(5)) - 2); break;
      case 2: f_.core.compare_set(scope(), r, key(), pick(2) ? "" : "v", "w"); break;
      case 3: f_.core.check(scope(), r, {key(), key()}); break;
      case 4: f_.core.delete_key(scope(), r, key()); break;
      case 5: f_.core.num_keys(scope(), r); f_.core.list_keys(scope(), r); break;
      case 6: f_.core.append(scope(), r, key(), "x"); break;
      case 7: f_.core.multi_set(scope(), r, {{key(), "1"}, {key(), "2"}}); break;
      case 8: f_.core.queue_push(scope(), r, key(), "item"); f_.core.queue_len(scope(), r, key()); break;
      case 9: ref = f_.core.get(scope(), r, key(), timeout(), recorder()); break;
      case 10: ref = f_.core.multi_get(scope(), r, {key(), key()}, timeout(), recorder()); break;
      case 11: ref = f_.core.wait(scope(), r, {key()}, timeout(), recorder()); break;
      case 12: ref = f_.core.barrier(scope(), r, key(), static_cast<std::int64_t>(pick(4)), timeout(), recorder()); break;
      default: ref = f_.core.queue_pop(scope(), r, key(), pick(2) == 0, timeout(), recorder()); break;
    }
    if (ref.id != 0) waiters_.push_back(ref);
  }

  CoreFixture& f_;
  std::mt19937_64 rng_;
  std::size_t incarnation_ = 0;
  bool had_rendezvous_ = false;
  std::uint64_t last_round_ = 0;
  std::vector<JoinRecord> joins_;
  std::vector<std::shared_ptr<KvRecord>> kv_;
  std::vector<std::pair<std::uint64_t, std::size_t>> sessions_;  // session id, its sink
  std::vector<std::pair<std::shared_ptr<RecordingSink>, bool>> sinks_;
  std::vector<WaiterRef> waiters_;
};

}  // namespace

TEST_CASE("random call sequences keep every round whole and answer every blocked call exactly once", "[core][random]") {
  std::size_t rounds = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    INFO("seed " << seed);
    CoreFixture f;
    RandomClient client(f, seed);
    for (int i = 0; i < 1000; ++i) client.step();
    client.check_final_state();
    rounds += client.completed_rounds;
  }
  // The sequences reached the interesting states: rounds did form.
  UNSCOPED_INFO(rounds << " rounds formed");
  CHECK(rounds > 200);
}
