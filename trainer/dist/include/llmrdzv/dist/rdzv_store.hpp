// A c10d::Store whose keys live in rdzvd's key-value space for one round, so process groups
// (Gloo, NCCL) rendezvous through the daemon every rank already talks to, and never through
// c10d's TCPStore. Only the client library's public headers are used: no gRPC or protobuf types
// meet torch headers. Errors surface as c10d errors (timeouts as DistStoreError naming the key).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llmrdzv/client/client.hpp"

namespace llmrdzv::dist {

class RdzvStore final : public c10d::Store {
 public:
  // Keys go to `round`'s space (round 0: the rendezvous-wide space), under `prefix` (so several
  // process groups can share a round). The client must outlive the store and its clones.
  RdzvStore(std::shared_ptr<client::Client> client, std::uint64_t round, std::string prefix,
            std::chrono::milliseconds timeout = kDefaultTimeout);

  c10::intrusive_ptr<c10d::Store> clone() override;

  void set(const std::string& key, const std::vector<std::uint8_t>& value) override;
  std::vector<std::uint8_t> compareSet(const std::string& key,
                                       const std::vector<std::uint8_t>& expected,
                                       const std::vector<std::uint8_t>& desired) override;
  // Blocks until the key exists, up to the store timeout (Gloo asks for keys not yet written).
  std::vector<std::uint8_t> get(const std::string& key) override;
  std::int64_t add(const std::string& key, std::int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  // Keys of this store's round space (all prefixes: the daemon counts per space).
  std::int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;
  void append(const std::string& key, const std::vector<std::uint8_t>& value) override;
  std::vector<std::vector<std::uint8_t>> multiGet(const std::vector<std::string>& keys) override;
  void multiSet(const std::vector<std::string>& keys,
                const std::vector<std::vector<std::uint8_t>>& values) override;
  bool hasExtendedApi() const override { return true; }
  void queuePush(const std::string& key, const std::vector<std::uint8_t>& value) override;
  std::vector<std::uint8_t> queuePop(const std::string& key, bool block) override;
  std::int64_t queueLen(const std::string& key) override;
  // Keys under this store's prefix, with the prefix removed.
  std::vector<std::string> listKeys() override;
  // rdzvd's barrier. c10d::Store declares this virtual only in newer torch (CMake finds out:
  // LLMRDZV_TORCH_STORE_HAS_BARRIER); with torch 2.11 it is this class's own member.
  void barrier(const std::string& key, std::int64_t world_size, const std::chrono::milliseconds& timeout)
#if LLMRDZV_TORCH_STORE_HAS_BARRIER
      override
#endif
      ;

  std::uint64_t round() const { return round_; }
  const std::string& prefix() const { return prefix_; }

 private:
  // c10d's Store::kNoTimeout (0) means "wait as long as it takes"; rdzvd caps every wait at its
  // max_timeout_ms (default one hour), so that is what "no timeout" asks for.
  static constexpr std::chrono::milliseconds kLongestWait{3'600'000};
  static std::chrono::milliseconds blocking(std::chrono::milliseconds timeout) {
    return timeout == kNoTimeout ? kLongestWait : timeout;
  }
  std::string full(const std::string& key) const { return prefix_ + key; }
  std::vector<std::string> full(const std::vector<std::string>& keys) const;
  client::KvSpace space() const { return client_->kv(round_); }

  std::shared_ptr<client::Client> client_;
  std::uint64_t round_;
  std::string prefix_;
};

}  // namespace llmrdzv::dist
