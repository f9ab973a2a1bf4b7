// Tokens: random tokens are fresh hex, site tokens match an independent HMAC-SHA256 and bind the
// uid and rendezvous id, uid parsing rejects anything not of the exact form, comparison is exact.
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
