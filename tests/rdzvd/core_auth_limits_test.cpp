// Core auth (step and site mode, tokens never logged) and every client-controlled limit.
#include <catch2/catch.hpp>

#include "core_fixture.hpp"
#include "llmrdzv/common/token.hpp"

using namespace llmrdzv::core;
using namespace llmrdzv::core::testing;

namespace {

CoreConfig site_config() {
  CoreConfig config = step_config();
  config.auth = {Mode::site, "", "", "the-site-secret", kTestDaemonNonce};
  return config;
}

// What a client holding the site token of (uid, rdzv_id) shows after its handshake.
std::string site_ticket(std::uint32_t uid, const std::string& rdzv_id, const std::string& secret = "the-site-secret") {
  return ticket_for(llmrdzv::site_token(secret, uid, rdzv_id), rdzv_id);
}

JoinRequest site_join(const std::string& rdzv_id, std::uint32_t uid, const std::string& participant) {
  JoinRequest r;
  r.scope = {rdzv_id, site_ticket(uid, rdzv_id)};
  r.participant_id = participant;
  r.host = "h";
  r.min_participants = 1;
  r.max_participants = 1;
  return r;
}

}  // namespace

TEST_CASE("step mode: other rendezvous ids are foreign, wrong or missing tokens denied", "[core][auth]") {
  CoreFixture f;
  auto foreign = f.request("a", 1, 1);
  foreign.scope.rdzv_id = "43.0";
  auto o = f.join(foreign);
  CHECK(o->status.code == Code::not_found);
  CHECK(o->status.message.rfind("foreign-rendezvous:", 0) == 0);
  auto wrong = f.request("a", 1, 1);
  wrong.scope.ticket = ticket_for("step-token-secreT", "42.0");
  CHECK(f.join(wrong)->status.code == Code::permission_denied);
  auto missing = f.request("a", 1, 1);
  missing.scope.ticket.clear();
  CHECK(f.join(missing)->status.code == Code::permission_denied);
  CHECK(f.core.set(Scope{"42.0", "bad"}, 0, "k", "v").code == Code::permission_denied);
  CHECK(f.core.leave(Scope{"42.0", ""}, "a").code == Code::permission_denied);
  // The token itself is no ticket (what a client older than the handshake sends), nor is the
  // ticket a client computed against another daemon process's nonce.
  CHECK(f.core.set(Scope{"42.0", "step-token-secret"}, 0, "k", "v").code == Code::permission_denied);
  CHECK(f.core.set(Scope{"42.0", llmrdzv::client_ticket("step-token-secret", "42.0", std::string(32, 'o'))}, 0, "k", "v")
            .code == Code::permission_denied);
  CHECK(f.join(f.request("a", 1, 1))->status.ok());
}

TEST_CASE("hello: the daemon proves the token over the client's nonce and its port", "[core][auth]") {
  const std::string nonce = llmrdzv::random_bytes(llmrdzv::kNonceBytes);
  SECTION("step mode") {
    CoreFixture f;
    const auto answer = f.core.hello({"42.0", "", nonce}, 4242);
    REQUIRE(answer.ok());
    CHECK(answer.value().daemon_nonce == kTestDaemonNonce);
    // What the client recomputes with its own token and the port it dialled.
    CHECK(answer.value().proof == llmrdzv::daemon_proof("step-token-secret", "42.0", "", 4242, nonce, kTestDaemonNonce));
    CHECK(answer.value().proof != llmrdzv::daemon_proof("step-token-secret", "42.0", "", 4243, nonce, kTestDaemonNonce));
    CHECK(answer.value().proof != llmrdzv::daemon_proof("step-token-secreT", "42.0", "", 4242, nonce, kTestDaemonNonce));
    // A fresh client nonce gives a different proof: an old answer cannot be replayed.
    const auto other = f.core.hello({"42.0", "", llmrdzv::random_bytes(llmrdzv::kNonceBytes)}, 4242);
    REQUIRE(other.ok());
    CHECK(other.value().proof != answer.value().proof);
    const auto foreign = f.core.hello({"43.0", "", nonce}, 4242);
    CHECK(foreign.status().code == Code::not_found);
    CHECK(foreign.status().message.rfind("foreign-rendezvous:", 0) == 0);
    CHECK(f.core.hello({"42.0", "", "short"}, 4242).status().code == Code::invalid_argument);
    CHECK(f.core.hello({"", "", nonce}, 4242).status().code == Code::invalid_argument);
  }
  SECTION("site mode: the key id names the uid whose token proves") {
    CoreFixture f(site_config());
    const std::string token = llmrdzv::site_token("the-site-secret", 1000, "train");
    REQUIRE(llmrdzv::token_key_id(token) == "v1.1000");
    const auto answer = f.core.hello({"train", "v1.1000", nonce}, 7000);
    REQUIRE(answer.ok());
    CHECK(answer.value().proof == llmrdzv::daemon_proof(token, "train", "v1.1000", 7000, nonce, kTestDaemonNonce));
    const auto other_uid = f.core.hello({"train", "v1.1001", nonce}, 7000);
    REQUIRE(other_uid.ok());
    CHECK(other_uid.value().proof != answer.value().proof);
    const auto no_key = f.core.hello({"train", "", nonce}, 7000);
    CHECK(no_key.status().code == Code::invalid_argument);
    CHECK_THAT(no_key.status().message, Catch::Contains("site token"));
    CHECK(f.core.hello({"train", "v1.007", nonce}, 7000).status().code == Code::invalid_argument);
  }
}

TEST_CASE("site mode: HMAC tokens, per-uid namespaces, wrong tokens denied", "[core][auth]") {
  CoreFixture f(site_config());
  auto alice = f.join(site_join("train", 1000, "a"));
  auto bob = f.join(site_join("train", 1001, "b"));
  REQUIRE(alice->status.ok());
  REQUIRE(bob->status.ok());
  // Same id, different users: two rendezvous, each its own round 1 of one member.
  CHECK(f.core.rendezvous_count() == 2);
  CHECK(alice->assignment.world_size == 1);
  CHECK(bob->assignment.world_size == 1);
  const Scope alice_scope{"train", site_ticket(1000, "train")};
  REQUIRE(f.core.set(alice_scope, 0, "k", "alice").ok());
  const Scope bob_scope{"train", site_ticket(1001, "train")};
  auto seen_by_bob = std::make_shared<KvOutcome>();
  f.core.get(bob_scope, 0, "k", 0, CoreFixture::record(seen_by_bob));
  CHECK(seen_by_bob->status.code == Code::not_found);

  auto forged = site_join("train", 1000, "c");
  forged.scope.ticket = site_ticket(1000, "train", "another-secret");
  CHECK(f.join(forged)->status.code == Code::permission_denied);
  auto other_id = site_join("train", 1000, "c");
  other_id.scope.rdzv_id = "eval";  // token of "train" used for "eval"
  CHECK(f.join(other_id)->status.code == Code::permission_denied);
  auto garbage = site_join("train", 1000, "c");
  garbage.scope.ticket = "not-a-site-ticket";
  CHECK(f.join(garbage)->status.code == Code::permission_denied);
  garbage.scope.ticket = llmrdzv::site_token("the-site-secret", 1000, "train");  // the token itself
  CHECK(f.join(garbage)->status.code == Code::permission_denied);
}

TEST_CASE("site mode: Status without a valid scope shows only the totals", "[core][auth]") {
  CoreFixture f(site_config());
  REQUIRE(f.join(site_join("train", 1000, "a"))->status.ok());
  REQUIRE(f.join(site_join("secret-project", 1001, "b"))->status.ok());
  const Scope alice{"train", site_ticket(1000, "train")};
  REQUIRE(f.core.set(alice, 0, "k", "12345").ok());
  const auto anyone = f.core.status(std::nullopt);
  REQUIRE(anyone.ok());
  CHECK(anyone.value().rendezvous.empty());  // no ids, states or sizes of other users' rendezvous
  CHECK(anyone.value().totals.rendezvous == 2);
  CHECK(anyone.value().totals.members == 2);
  CHECK(anyone.value().totals.waiting == 0);
  CHECK(anyone.value().totals.kv_bytes == 6);
  const auto own = f.core.status(alice);  // a user sees their own rendezvous in full
  REQUIRE(own.ok());
  REQUIRE(own.value().rendezvous.size() == 1);
  CHECK(own.value().rendezvous[0].rdzv_id == "train");
  CHECK(own.value().rendezvous[0].member_details.size() == 1);
  CHECK(f.core.status(Scope{"secret-project", alice.ticket}).status().code == Code::permission_denied);
}

TEST_CASE("tokens never appear in log lines or error messages", "[core][auth]") {
  CoreFixture f;
  f.join_all(2);
  auto wrong = f.request("x", 2, 2);
  wrong.scope.ticket = "guessed-token-value";
  auto o = f.join(wrong);
  f.core.leave(f.scope(), "p0");
  f.core.shutdown("test");
  REQUIRE_FALSE(f.log.empty());
  for (const auto& line : f.log) {
    CHECK(line.find("step-token-secret") == std::string::npos);
    CHECK(line.find("guessed-token-value") == std::string::npos);
    CHECK(line.find(f.scope().ticket) == std::string::npos);
  }
  CHECK(o->status.message.find("guessed-token-value") == std::string::npos);
}

TEST_CASE("every client-controlled limit gives RESOURCE_EXHAUSTED naming the limit", "[core][limits]") {
  CoreConfig config = site_config();
  Limits& l = config.settings.limits;
  l.max_rendezvous = 3;
  l.max_rendezvous_per_user = 2;
  l.max_participants = 8;
  l.max_keys = 4;
  l.max_key_length = 8;
  l.max_value_size = 16;
  l.max_bytes = 41;
  l.max_id_length = 12;
  l.max_waiters = 3;
  l.max_timeout_ms = 10000;
  l.max_keys_per_request = 3;
  CoreFixture f(config);
  auto expect = [](const Status& status, const char* limit) {
    CHECK(status.code == Code::resource_exhausted);
    CHECK_THAT(status.message, Catch::Contains(std::string("limit ") + limit));
  };
  REQUIRE(f.join(site_join("r1", 1, "a"))->status.ok());
  REQUIRE(f.join(site_join("r2", 1, "a"))->status.ok());
  expect(f.join(site_join("r3", 1, "a"))->status, "max_rendezvous_per_user");  // uid 1 has two
  REQUIRE(f.join(site_join("r3", 2, "b"))->status.ok());                     // uid 2 may still
  expect(f.join(site_join("r4", 3, "c"))->status, "max_rendezvous");           // the daemon is full
  expect(f.join(site_join("r1", 1, "a-participant-id-too-long"))->status, "max_id_length");
  auto many = site_join("r1", 1, "a");
  many.max_participants = 9;
  expect(f.join(many)->status, "max_participants");
  auto slow = site_join("r1", 1, "a");
  slow.timeout_ms = 10001;
  expect(f.join(slow)->status, "max_timeout_ms");
  auto late_call = site_join("r1", 1, "a");
  late_call.last_call_ms = 10001;
  expect(f.join(late_call)->status, "max_timeout_ms");
  CHECK_THAT(f.join(late_call)->status.message, Catch::Contains("last_call_ms=10001"));

  const Scope s{"r1", site_ticket(1, "r1")};
  expect(f.core.set(s, 1, "123456789", "v"), "max_key_length");
  expect(f.core.set(s, 1, "k", std::string(17, 'v')), "max_value_size");
  REQUIRE(f.core.set(s, 1, "k1", std::string(16, 'v')).ok());   // 18 bytes
  REQUIRE(f.core.set(s, 0, "k2", std::string(16, 'v')).ok());   // 36 bytes, across spaces
  expect(f.core.set(s, 1, "k3", "vvvv"), "max_bytes");          // would be 42
  REQUIRE(f.core.set(s, 1, "k3", "v").ok());
  REQUIRE(f.core.set(s, 1, "k4", "").ok());
  expect(f.core.set(s, 1, "k5", ""), "max_keys");
  expect(f.core.append(s, 1, "k4", "vvvvv"), "max_bytes");
  expect(f.core.multi_set(s, 1, {{"a", "1"}, {"b", "1"}, {"c", "1"}, {"d", "1"}}), "max_keys_per_request");
  // Blocked calls: their keys count as bytes too, so room is made first (5 bytes stay).
  REQUIRE(f.core.delete_key(s, 1, "k1").ok());
  REQUIRE(f.core.delete_key(s, 0, "k2").ok());
  std::vector<std::shared_ptr<KvOutcome>> waits;
  for (int i = 0; i < 4; ++i) {
    waits.push_back(std::make_shared<KvOutcome>());
    f.core.get(s, 0, "m", 5000, CoreFixture::record(waits.back()));
  }
  CHECK_FALSE(waits[2]->done);
  expect(waits[3]->status, "max_waiters");
  auto long_wait = std::make_shared<KvOutcome>();
  f.core.get(s, 1, "k1x", 10001, CoreFixture::record(long_wait));
  expect(long_wait->status, "max_waiters");  // the waiter limit is checked first
  f.advance(Millis(5000));  // the three waiters time out
  f.core.get(s, 0, "k1x", 10001, CoreFixture::record(long_wait));
  expect(long_wait->status, "max_timeout_ms");
}

TEST_CASE("site mode: one user's rendezvous together hold at most max_bytes_per_user", "[core][limits]") {
  CoreConfig config = site_config();
  config.settings.limits.max_bytes = 100;
  config.settings.limits.max_bytes_per_user = 150;
  CoreFixture f(config);
  REQUIRE(f.join(site_join("r1", 1, "a"))->status.ok());
  REQUIRE(f.join(site_join("r2", 1, "b"))->status.ok());
  REQUIRE(f.join(site_join("r3", 2, "c"))->status.ok());
  const Scope r1{"r1", site_ticket(1, "r1")};
  const Scope r2{"r2", site_ticket(1, "r2")};
  const Scope r3{"r3", site_ticket(2, "r3")};
  REQUIRE(f.core.set(r1, 1, "k", std::string(89, 'v')).ok());  // uid 1: 90 bytes
  const Status over = f.core.set(r2, 1, "k", std::string(69, 'v'));  // would be 160 for uid 1
  CHECK(over.code == Code::resource_exhausted);
  CHECK_THAT(over.message, Catch::Contains("limit max_bytes_per_user (150)") &&
                               Catch::Contains("would bring this user's rendezvous to 160 bytes"));
  CHECK(f.core.set(r3, 1, "k", std::string(89, 'v')).ok());  // another uid has its own budget
  // When uid 1's first rendezvous ends, its bytes are given back.
  REQUIRE(f.core.leave(r1, "a").ok());
  CHECK(f.core.set(r2, 1, "k", std::string(69, 'v')).ok());
}

TEST_CASE("the keys a blocked call holds count against max_bytes until it ends", "[core][limits]") {
  CoreConfig config = site_config();
  config.settings.limits.max_bytes = 100;
  CoreFixture f(config);
  REQUIRE(f.join(site_join("r1", 1, "a"))->status.ok());
  const Scope s{"r1", site_ticket(1, "r1")};  // round 0: the rendezvous-wide space outlives the round
  auto first = std::make_shared<KvOutcome>();
  f.core.wait(s, 0, {std::string(30, 'a'), std::string(10, 'b')}, 5000, CoreFixture::record(first));  // holds 80
  CHECK_FALSE(first->done);
  auto second = std::make_shared<KvOutcome>();
  f.core.get(s, 0, std::string(11, 'c'), 5000, CoreFixture::record(second));  // 22 more: 102
  REQUIRE(second->done);
  CHECK(second->status.code == Code::resource_exhausted);
  CHECK_THAT(second->status.message, Catch::Contains("limit max_bytes (100)") &&
                                         Catch::Contains("a blocked call holding 1 key(s) (22 bytes)"));
  CHECK(f.core.set(s, 0, "k", std::string(20, 'v')).code == Code::resource_exhausted);  // 80 + 21
  // A barrier that cannot hold its key is refused before it counts as an arrival.
  auto barrier = std::make_shared<KvOutcome>();
  f.core.barrier(s, 0, std::string(11, 'd'), 2, 5000, CoreFixture::record(barrier));
  CHECK(barrier->status.code == Code::resource_exhausted);
  CHECK_FALSE(f.core.check(s, 0, {std::string(11, 'd')}).value());
  f.advance(Millis(5000));  // the wait times out and gives its bytes back
  REQUIRE(first->done);
  CHECK(first->status.code == Code::deadline_exceeded);
  CHECK(f.core.set(s, 0, "k", std::string(98, 'v')).ok());  // 99 bytes
}

TEST_CASE("a barrier refused for max_bytes does not count its arrival", "[core][limits]") {
  CoreConfig config = site_config();
  config.settings.limits.max_bytes = 100;
  CoreFixture f(config);
  REQUIRE(f.join(site_join("r1", 1, "a"))->status.ok());
  const Scope s{"r1", site_ticket(1, "r1")};
  REQUIRE(f.core.set(s, 0, "f", std::string(96, 'v')).ok());  // 97 bytes
  // Storing the count of "b" takes 2 bytes (99), and blocking on it 2 more (101): refused. The
  // room for the blocked key used to be checked before the count was stored, and after it again.
  auto refused = std::make_shared<KvOutcome>();
  f.core.barrier(s, 0, "b", 2, 5000, CoreFixture::record(refused));
  REQUIRE(refused->done);
  CHECK(refused->status.code == Code::resource_exhausted);
  CHECK_THAT(refused->status.message, Catch::Contains("limit max_bytes (100)") &&
                                          Catch::Contains("would bring the rendezvous to 101 bytes"));
  CHECK_FALSE(f.core.check(s, 0, {"b"}).value());
  // The last arrival does not block, so it needs no room for that.
  auto last = std::make_shared<KvOutcome>();
  f.core.barrier(s, 0, "b", 1, 5000, CoreFixture::record(last));
  REQUIRE(last->done);
  CHECK(last->status.ok());
  auto count = std::make_shared<KvOutcome>();
  f.core.get(s, 0, "b", 0, CoreFixture::record(count));
  CHECK(count->values == std::vector<std::string>{"1"});
}

TEST_CASE("ids are checked for emptiness and length", "[core][limits]") {
  CoreFixture f;
  CHECK(f.core.set(Scope{"", "t"}, 0, "k", "v").code == Code::invalid_argument);
  const std::string huge(1 << 20, 'x');
  const Status status = f.core.set(Scope{huge, "t"}, 0, "k", "v");
  CHECK(status.code == Code::resource_exhausted);
  CHECK(status.message.size() < 200);  // the huge id is not echoed back
  // Hello too: an id over max_id_length is refused before the foreign-rendezvous check quotes it.
  const auto hello = f.core.hello({std::string(20000, 'x'), "", llmrdzv::random_bytes(llmrdzv::kNonceBytes)}, 4242);
  REQUIRE_FALSE(hello.ok());
  CHECK(hello.status().code == Code::resource_exhausted);
  CHECK_THAT(hello.status().message, Catch::Contains("limit max_id_length"));
  CHECK(hello.status().message.size() < 200);
}

TEST_CASE("site mode: the metrics snapshot names each rendezvous' owner uid", "[core][auth][metrics]") {
  CoreFixture f(site_config());
  REQUIRE(f.join(site_join("train", 1000, "a"))->status.ok());
  REQUIRE(f.join(site_join("eval", 1000, "b"))->status.ok());
  REQUIRE(f.join(site_join("train", 1001, "c"))->status.ok());
  const auto rendezvous = f.core.metrics().rendezvous;
  REQUIRE(rendezvous.size() == 3);  // sorted by owner, then id
  CHECK(rendezvous[0].owner == "1000");
  CHECK(rendezvous[0].status.rdzv_id == "eval");
  CHECK(rendezvous[1].owner == "1000");
  CHECK(rendezvous[1].status.rdzv_id == "train");
  CHECK(rendezvous[2].owner == "1001");
}

TEST_CASE("admit: a call's metadata credential is checked alone, before any body", "[core][auth]") {
  SECTION("step mode") {
    const Authenticator auth(step_config().auth);
    CHECK(auth.admit("42.0", llmrdzv::hello_credential("step-token-secret", "42.0", 4242), 4242).ok());
    CHECK(auth.admit("42.0", ticket_for("step-token-secret", "42.0"), 4242).ok());
    // Made for another port (a squatter or relay on the port the client dialled), another token,
    // forged, missing.
    CHECK(auth.admit("42.0", llmrdzv::hello_credential("step-token-secret", "42.0", 4243), 4242).code ==
          Code::permission_denied);
    CHECK(auth.admit("42.0", llmrdzv::hello_credential("step-token-secreT", "42.0", 4242), 4242).code ==
          Code::permission_denied);
    CHECK(auth.admit("42.0", "t2." + std::string(64, 'a'), 4242).code == Code::permission_denied);
    CHECK(auth.admit("42.0", "h1." + std::string(64, 'a'), 4242).code == Code::permission_denied);
    const Status missing = auth.admit("", "", 4242);
    CHECK(missing.code == Code::permission_denied);
    CHECK_THAT(missing.message, Catch::Contains("no credential"));
    // Another id: the answer port-probing clients move on by, naming not the id served here.
    const Status foreign = auth.admit("43.0", llmrdzv::hello_credential("other-token", "43.0", 4242), 4242);
    CHECK(foreign.code == Code::not_found);
    CHECK(foreign.message.rfind("foreign-rendezvous:", 0) == 0);
    CHECK(foreign.message.find("42.0") == std::string::npos);
  }
  SECTION("site mode: the uid in the credential picks the key") {
    const Authenticator auth(site_config().auth);
    const std::string token = llmrdzv::site_token("the-site-secret", 1000, "job.1");
    CHECK(auth.admit("job.1", llmrdzv::hello_credential(token, "job.1", 80), 80).ok());
    CHECK(auth.admit("job.1", site_ticket(1000, "job.1"), 80).ok());
    CHECK(auth.admit("job.2", llmrdzv::hello_credential(token, "job.1", 80), 80).code == Code::permission_denied);
    CHECK(auth.admit("job.1", llmrdzv::hello_credential(llmrdzv::site_token("other", 1000, "job.1"), "job.1", 80), 80)
              .code == Code::permission_denied);
  }
}
