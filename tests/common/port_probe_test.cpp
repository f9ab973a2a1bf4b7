// Step ports: deterministic, inside the range, distinct for rdzvd and master, probing wraps.
#include "llmrdzv/common/port_probe.hpp"

#include <catch2/catch.hpp>
#include <set>

using namespace llmrdzv;

TEST_CASE("port ranges parse and reject malformed text") {
  auto r = parse_port_range("29500-29999");
  REQUIRE(r);
  CHECK(r->lo == 29500);
  CHECK(r->hi == 29999);
  CHECK(r->size() == 500);
  auto single = parse_port_range("4000");
  REQUIRE(single);
  CHECK(single->size() == 1);
  for (const char* bad : {"", "-", "0-10", "10-5", "1-70000", "abc", "10-", "-10", "10-20x", " 10-20"})
    CHECK_FALSE(parse_port_range(bad));
}

TEST_CASE("step ports are deterministic, in range, and differ by purpose") {
  const PortRange range{30000, 30099};
  std::set<std::uint16_t> seen;
  for (std::uint64_t job = 1; job < 200; ++job) {
    for (std::uint64_t step : {0ULL, 1ULL, 4294967291ULL}) {
      auto rdzvd = step_port(range, job, step, PortPurpose::rdzvd);
      auto master = step_port(range, job, step, PortPurpose::master);
      CHECK(range.contains(rdzvd));
      CHECK(range.contains(master));
      CHECK(rdzvd != master);
      CHECK(rdzvd == step_port(range, job, step, PortPurpose::rdzvd));
      seen.insert(rdzvd);
    }
  }
  CHECK(seen.size() > 80);  // spread over the range, not clustered
}

TEST_CASE("probe sequence walks the range and wraps") {
  const PortRange range{100, 104};
  CHECK(probe_port(range, 103, 0) == 103);
  CHECK(probe_port(range, 103, 1) == 104);
  CHECK(probe_port(range, 103, 2) == 100);
  CHECK(probe_port(range, 103, 7) == 100);
  CHECK(probe_port(range, 9, 0) == 100);  // a base outside the range starts at lo
}
