// Port ranges: parsing, and the probe sequence walking the range and wrapping.
#include "llmrdzv/common/port_probe.hpp"

#include <catch2/catch.hpp>

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

TEST_CASE("probe sequence walks the range and wraps") {
  const PortRange range{100, 104};
  CHECK(probe_port(range, 103, 0) == 103);
  CHECK(probe_port(range, 103, 1) == 104);
  CHECK(probe_port(range, 103, 2) == 100);
  CHECK(probe_port(range, 103, 7) == 100);
  CHECK(probe_port(range, 9, 0) == 100);  // a base outside the range starts at lo
}
