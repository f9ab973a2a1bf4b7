// Bounds on everything a client controls. Each violation is RESOURCE_EXHAUSTED (or
// INVALID_ARGUMENT for malformed values) with a message naming the limit and its value, so an
// operator can tell which key of rdzvd.yaml to raise.
#pragma once

#include <cstdint>

namespace llmrdzv::core {

struct Limits {
  std::uint32_t max_rendezvous = 1024;          // live rendezvous in the daemon
  std::uint32_t max_rendezvous_per_user = 64;   // site mode: live rendezvous of one uid
  std::uint32_t max_participants = 16384;       // max_participants a rendezvous may ask for
  std::uint32_t max_keys = 1u << 20;            // keys + queues per rendezvous, all spaces
  std::uint32_t max_key_length = 1024;          // bytes
  std::uint32_t max_value_size = 16u << 20;     // bytes per value
  std::uint64_t max_bytes = 256ull << 20;       // key + value bytes per rendezvous, all spaces
  std::uint64_t max_bytes_per_user = 1ull << 30;  // site mode: key + value bytes of all of one uid's rendezvous
  std::uint32_t max_id_length = 128;            // rdzv_id, participant_id, host
  std::uint32_t max_waiters = 65536;            // blocked calls (joins + KV waits) per rendezvous
  std::uint32_t max_timeout_ms = 3'600'000;     // any timeout a client asks for
  std::uint32_t max_keys_per_request = 65536;   // keys in one Check/Wait/MultiGet/MultiSet
  std::uint64_t max_reply_bytes = 64ull << 20;  // value bytes in one Get/MultiGet answer
};

}  // namespace llmrdzv::core
