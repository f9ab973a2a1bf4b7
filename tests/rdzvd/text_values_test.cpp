// The one parser of whole numbers, HOST:PORT and secret files: exact forms only, and a secret
// file that is a symlink, a FIFO, too open or empty is refused with a message naming it.
#include "llmrdzv/common/text_values.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "scratch_dir.hpp"

using namespace llmrdzv;
using llmrdzv::testing::ScratchDir;

TEST_CASE("whole numbers: decimal digits in range, nothing else", "[text]") {
  CHECK(parse_unsigned("0", 0, 10) == 0u);
  CHECK(parse_unsigned("10", 0, 10) == 10u);
  CHECK(parse_unsigned("18446744073709551615", 0, UINT64_MAX) == UINT64_MAX);
  for (const char* bad : {"", "11", "-1", "+1", " 1", "1 ", "1x", "0x10", "18446744073709551616"})
    CHECK_FALSE(parse_unsigned(bad, 0, 10));
  CHECK_FALSE(parse_unsigned("4", 5, 10));
  CHECK(parse_signed("-1", -1, 5) == -1);
  CHECK_FALSE(parse_signed("-2", -1, 5));
  CHECK_FALSE(parse_signed("--1", -5, 5));
}

TEST_CASE("HOST:PORT: a host, and a port in range", "[text]") {
  const auto plain = parse_host_port("node01:29400");
  REQUIRE(plain);
  CHECK(plain->host == "node01");
  CHECK(plain->port == 29400);
  const auto v6 = parse_host_port("[::1]:80");
  REQUIRE(v6);
  CHECK(v6->host == "[::1]");
  CHECK(parse_host_port("0.0.0.0:0", 0)->port == 0);
  for (const char* bad : {"", "node01", ":80", "node01:", "node01:0", "node01:65536", "node01:8o", "[::1:80"})
    CHECK_FALSE(parse_host_port(bad));
}

TEST_CASE("secret files: regular, private when asked, not empty, never followed or blocked on", "[text]") {
  ScratchDir dir("text-values");
  const std::string secret = dir.file("secret");
  { std::ofstream(secret) << "s3cret \t\n"; }
  chmod(secret.c_str(), 0600);
  CHECK(read_secret_file(secret) == "s3cret");
  CHECK(read_secret_file(secret, getuid()) == "s3cret");
  CHECK_THROWS_WITH(read_secret_file(secret, getuid() + 1), Catch::Contains("must be owned by uid"));
  chmod(secret.c_str(), 0644);
  CHECK_THROWS_WITH(read_secret_file(secret, getuid()), Catch::Contains("no group or other permissions"));
  CHECK(read_secret_file(secret) == "s3cret");  // no owner rule: any mode
  const std::string link = dir.file("link");
  REQUIRE(symlink(secret.c_str(), link.c_str()) == 0);
  CHECK_THROWS_WITH(read_secret_file(link), Catch::Contains("cannot read '" + link + "'"));
  const std::string fifo = dir.file("fifo");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(read_secret_file(fifo), Catch::Contains("'" + fifo + "' is not a regular file"));
  CHECK_THROWS_WITH(read_secret_file(dir.file("absent")), Catch::Contains("No such file"));
  { std::ofstream(secret) << "\n \n"; }
  CHECK_THROWS_WITH(read_secret_file(secret), Catch::Contains("'" + secret + "' is empty"));
  { std::ofstream(secret) << std::string(70000, 'x'); }
  CHECK_THROWS_WITH(read_secret_file(secret), Catch::Contains("larger than 64 KiB"));
}
