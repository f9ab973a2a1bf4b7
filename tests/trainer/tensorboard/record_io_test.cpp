// TFRecord framing: CRC-32C against its published check values, records that round-trip, and a
// torn or flipped byte anywhere in the last record found without losing the records before it.
#include <catch2/catch.hpp>

#include <string>

#include "llmrdzv/tensorboard/record_io.hpp"

using namespace llmrdzv::tensorboard;

TEST_CASE("crc32c matches the Castagnoli check values", "[tensorboard]") {
  CHECK(crc32c("123456789") == 0xE3069283u);  // the standard check value of CRC-32C
  CHECK(crc32c("") == 0u);
  CHECK(crc32c(std::string(32, '\0')) == 0x8A9136AAu);  // RFC 3720 B.4: 32 bytes of zeros
  CHECK(crc32c(std::string(32, '\xff')) == 0x62A8AB43u);  // RFC 3720 B.4: 32 bytes of 0xff
}

TEST_CASE("masked crc rotates right by 15 and adds TFRecord's constant", "[tensorboard]") {
  const std::uint32_t crc = crc32c("123456789");
  CHECK(masked_crc32c("123456789") == ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST_CASE("framed records scan back in order", "[tensorboard]") {
  const std::string bytes = frame_record("first") + frame_record("") + frame_record(std::string(70000, 'x'));
  const RecordScan scan = scan_records(bytes);
  REQUIRE(scan.damage.empty());
  REQUIRE(scan.records.size() == 3);
  CHECK(scan.records[0] == "first");
  CHECK(scan.records[1].empty());
  CHECK(scan.records[2] == std::string(70000, 'x'));
  CHECK(scan.valid_bytes == bytes.size());
  // The header: little-endian length first.
  CHECK(frame_record("abc").substr(0, 8) == std::string("\x03\0\0\0\0\0\0\0", 8));
  CHECK(frame_record("abc").size() == 3 + 16);
}

TEST_CASE("a torn last record leaves the earlier ones readable", "[tensorboard]") {
  const std::string good = frame_record("kept one") + frame_record("kept two");
  const std::string last = frame_record("the record being written when the run was killed");
  for (std::size_t cut = 0; cut < last.size(); ++cut) {
    const RecordScan scan = scan_records(good + last.substr(0, cut));
    INFO("cut after " << cut << " bytes of the last record");
    REQUIRE(scan.records.size() == 2);
    CHECK(scan.valid_bytes == good.size());
    CHECK(scan.damage.empty() == (cut == 0));
    CHECK(scan.torn == (cut != 0));  // a cut end, not corruption
  }
}

TEST_CASE("a flipped byte in a record is caught by its checksums", "[tensorboard]") {
  const std::string first = frame_record("first");
  const std::string second = frame_record("second record");
  for (std::size_t at = 0; at < second.size(); ++at) {
    std::string bytes = first + second;
    bytes[first.size() + at] ^= 0x10;
    const RecordScan scan = scan_records(bytes);
    INFO("byte " << at << " of the second record flipped");
    REQUIRE(scan.records.size() == 1);
    CHECK(scan.valid_bytes == first.size());
    CHECK_FALSE(scan.damage.empty());
    if (at >= 12) CHECK_FALSE(scan.torn);  // a flipped length may also read as a record running past the end
  }
}
