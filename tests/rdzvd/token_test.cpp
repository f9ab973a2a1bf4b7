// Tokens: random tokens are fresh hex, site tokens match an independent HMAC-SHA256 and bind the
// uid and rendezvous id, uid parsing rejects anything not of the exact form, comparison is exact;
// the handshake's proof and ticket match an independent HMAC and bind each of their inputs.
#include "llmrdzv/common/token.hpp"

#include <catch2/catch.hpp>
#include <set>

using namespace llmrdzv;

TEST_CASE("random tokens are 64 hex characters and never repeat", "[token]") {
  std::set<std::string> seen;
  for (int i = 0; i < 64; ++i) {
    const std::string token = make_random_token();
    CHECK(token.size() == 64);
    CHECK(token.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(token);
  }
  CHECK(seen.size() == 64);
}

TEST_CASE("site token matches HMAC-SHA256 computed by Python's hmac module", "[token]") {
  // python3 -c "import hmac,hashlib; print(hmac.new(b'site-secret',
  //   b'llm-rdzv v1\n1000\n1234.0', hashlib.sha256).hexdigest())"
  CHECK(site_token("site-secret", 1000, "1234.0") ==
        "v1.1000.a1e9aba8faca078a6b68e0e4c5e4c2ef9eb41b5d9e456fb850757e40f792fad5");
}

TEST_CASE("site tokens bind secret, uid and rendezvous id", "[token]") {
  const std::string base = site_token("s", 5, "job.1");
  CHECK(base == site_token("s", 5, "job.1"));
  CHECK(base != site_token("t", 5, "job.1"));
  CHECK(base != site_token("s", 6, "job.1"));
  CHECK(base != site_token("s", 5, "job.2"));
  // The newline separator keeps (uid 1, id "2\n3") apart from (uid 12, id "3") and the like.
  CHECK(site_token("s", 1, "23") != site_token("s", 12, "3"));
}

TEST_CASE("site_token_uid reads the uid of well-formed tokens only", "[token]") {
  CHECK(site_token_uid(site_token("s", 0, "x")) == 0u);
  CHECK(site_token_uid(site_token("s", 4294967295u, "x")) == 4294967295u);
  const std::string digest(64, 'a');
  CHECK(site_token_uid("v1.42." + digest) == 42u);
  for (const std::string& bad :
       {std::string(), std::string("v1."), "v2.42." + digest, "v1.." + digest, "v1.042." + digest,
        "v1.-1." + digest, "v1.4294967296." + digest, "v1.42x." + digest, "v1.42." + digest + "0",
        "v1.42." + std::string(64, 'A'), "v1.42." + std::string(63, 'a'), make_random_token()})
    CHECK_FALSE(site_token_uid(bad));
}

TEST_CASE("tokens_equal is exact", "[token]") {
  CHECK(tokens_equal("abc", "abc"));
  CHECK(tokens_equal("", ""));
  CHECK_FALSE(tokens_equal("abc", "abd"));
  CHECK_FALSE(tokens_equal("abc", "ab"));
  CHECK_FALSE(tokens_equal("", "a"));
}

namespace {
std::string hex_of(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : bytes) {
    hex += kDigits[c >> 4];
    hex += kDigits[c & 0xf];
  }
  return hex;
}
}  // namespace

TEST_CASE("handshake proof and ticket match HMAC-SHA256 computed by Python's hmac module", "[token][handshake]") {
  // f = lambda *xs: b''.join(str(len(x)).encode() + b':' + x for x in xs)
  // hmac.new(b'tok', b'llm-rdzv daemon proof v2\n' + f(b'9.0', b'', b'29400', b'c'*32, b'd'*32), sha256)
  const std::string client_nonce(32, 'c'), daemon_nonce(32, 'd');
  CHECK(hex_of(daemon_proof("tok", "9.0", "", 29400, client_nonce, daemon_nonce)) ==
        "8e6f27065ba3a2c51592693527b1007fff3d599794029b53b7bb41b79ee934eb");
  // hmac.new(b'tok', b'llm-rdzv client ticket v2\n' + f(b'9.0', b'd'*32), sha256)
  CHECK(client_ticket("tok", "9.0", daemon_nonce) == "t2.ce4e551ab6114a88bd21ddeb8e964bc4e5d899afcb8ae939f659910c486107b4");
}

TEST_CASE("handshake values bind every input", "[token][handshake]") {
  const std::string c(32, 'c'), d(32, 'd'), e(32, 'e');
  const std::string proof = daemon_proof("tok", "9.0", "", 29400, c, d);
  CHECK(proof.size() == 32);
  CHECK(proof != daemon_proof("tok2", "9.0", "", 29400, c, d));
  CHECK(proof != daemon_proof("tok", "9.1", "", 29400, c, d));
  CHECK(proof != daemon_proof("tok", "9.0", "v1.5", 29400, c, d));
  CHECK(proof != daemon_proof("tok", "9.0", "", 29401, c, d));
  CHECK(proof != daemon_proof("tok", "9.0", "", 29400, e, d));
  CHECK(proof != daemon_proof("tok", "9.0", "", 29400, c, e));
  // Length-prefixed fields: moving bytes from one field into the next changes the value.
  CHECK(daemon_proof("tok", "9.0", "1", 2, c, d) != daemon_proof("tok", "9.01", "", 2, c, d));
  const std::string ticket = client_ticket("tok", "9.0", d);
  CHECK(ticket != client_ticket("tok", "9.0", e));  // another daemon process
  CHECK(ticket != client_ticket("tok", "9.1", d));
  CHECK(ticket.find("tok") == std::string::npos);
  // Neither the proof nor the ticket is the token, and the ticket is no proof.
  CHECK(hex_of(proof) != ticket.substr(3));
}

TEST_CASE("key ids and tickets carry the uid of site tokens only", "[token][handshake]") {
  const std::string site = site_token("s", 1000, "job.1");
  CHECK(token_key_id(site) == "v1.1000");
  CHECK(token_key_id(make_random_token()).empty());
  CHECK(key_id_uid("v1.1000") == 1000u);
  CHECK(key_id_uid("v1.0") == 0u);
  for (const char* bad : {"", "v1.", "v1.01", "v2.5", "v1.5.", "v1.-5", "1000"}) CHECK_FALSE(key_id_uid(bad));
  const std::string d(32, 'd');
  const std::string site_ticket = client_ticket(site, "job.1", d);
  CHECK(site_ticket.rfind("t2.1000.", 0) == 0);
  CHECK(ticket_uid(site_ticket) == 1000u);
  CHECK_FALSE(ticket_uid(client_ticket(make_random_token(), "job.1", d)));
  CHECK_FALSE(ticket_uid(site));  // a token is not a ticket
  CHECK(random_bytes(kNonceBytes).size() == kNonceBytes);
  CHECK(random_bytes(kNonceBytes) != random_bytes(kNonceBytes));
}
