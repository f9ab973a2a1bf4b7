// TensorBoard's record framing (TFRecord): each record is
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes |
//   `length` data bytes | uint32 masked CRC-32C of the data
// An event file is the records back to back. A run killed mid-write leaves a torn last record,
// which scan_records finds by its length or checksums so the good records before it are kept.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmrdzv::tensorboard {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `data`.
std::uint32_t crc32c(std::string_view data);
// TFRecord's masking of a CRC (rotate right by 15, add 0xa282ead8), so CRCs of data that
// contains CRCs stay well distributed.
std::uint32_t masked_crc32c(std::string_view data);

// One framed record holding `data`.
std::string frame_record(std::string_view data);

struct RecordScan {
  std::vector<std::string_view> records;  // views into the scanned bytes
  std::uint64_t valid_bytes = 0;           // bytes up to the end of the last good record
  std::string damage;                      // empty, or why the bytes after valid_bytes were not read
  bool torn = false;  // the damage is a record cut short at the end (a killed writer), not corruption
};

// The records of an event file's bytes, up to the first torn or corrupt one.
RecordScan scan_records(std::string_view bytes);

}  // namespace llmrdzv::tensorboard
