// TFRecord framing and CRC-32C for record_io.hpp. A table-driven CRC is enough: the trainer writes
// a few hundred bytes per logging step and reads whole event files only when a run resumes.
#include "llmrdzv/tensorboard/record_io.hpp"

#include <array>

namespace llmrdzv::tensorboard {
namespace {

constexpr std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0x82F63B78u : 0u);
    table[i] = crc;
  }
  return table;
}
constexpr std::array<std::uint32_t, 256> kCrcTable = make_crc_table();

void put_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFFu));
}

std::uint64_t get_le(std::string_view bytes, int count) {
  std::uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  return value;
}

}  // namespace

std::uint32_t crc32c(std::string_view data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char c : data) crc = (crc >> 8) ^ kCrcTable[(crc ^ static_cast<unsigned char>(c)) & 0xFFu];
  return crc ^ 0xFFFFFFFFu;
}

std::uint32_t masked_crc32c(std::string_view data) {
  const std::uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string frame_record(std::string_view data) {
  std::string record;
  record.reserve(data.size() + 16);
  put_le(record, data.size(), 8);
  put_le(record, masked_crc32c(record), 4);
  record.append(data);
  put_le(record, masked_crc32c(data), 4);
  return record;
}

RecordScan scan_records(std::string_view bytes) {
  RecordScan scan;
  std::uint64_t at = 0;
  while (at < bytes.size()) {
    const std::string_view rest = bytes.substr(at);
    const std::string where = "record at byte " + std::to_string(at) + ": ";
    if (rest.size() < 12) {
      scan.damage = where + "torn header (" + std::to_string(rest.size()) + " bytes)";
      scan.torn = true;
      break;
    }
    if (get_le(rest.substr(8), 4) != masked_crc32c(rest.substr(0, 8))) {
      scan.damage = where + "length checksum mismatch";
      break;
    }
    const std::uint64_t length = get_le(rest, 8);
    if (length > rest.size() - 12 || rest.size() - 12 - length < 4) {
      scan.damage = where + "torn data (" + std::to_string(length) + " bytes announced, " +
                    std::to_string(rest.size() - 12) + " present with the checksum)";
      scan.torn = true;
      break;
    }
    const std::string_view data = rest.substr(12, length);
    if (get_le(rest.substr(12 + length), 4) != masked_crc32c(data)) {
      scan.damage = where + "data checksum mismatch";
      break;
    }
    scan.records.push_back(data);
    at += 16 + length;
    scan.valid_bytes = at;
  }
  return scan;
}

}  // namespace llmrdzv::tensorboard
