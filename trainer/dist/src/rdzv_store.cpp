// RdzvStore: each c10d::Store operation is one rdzvd key-value call; client errors become c10d
// errors that name the operation, the key and (for timeouts) the limit.
#include "llmrdzv/dist/rdzv_store.hpp"

#include <torch/csrc/distributed/c10d/exception.h>

#include <utility>

namespace llmrdzv::dist {
namespace {

using client::ErrorCode;
using client::RdzvError;

std::string to_string(const std::vector<std::uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }
std::vector<std::uint8_t> to_bytes(const std::string& text) { return {text.begin(), text.end()}; }

// Runs one client call and translates its failure into the c10d error a process group expects.
template <class Call>
auto translated(const std::string& what, Call&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const RdzvError& e) {
    const std::string message = "rdzv store: " + what + " failed: " + e.what() + " (" +
                                std::string(client::error_code_name(e.code())) + ")";
    switch (e.code()) {
      case ErrorCode::unavailable: C10D_THROW_ERROR(DistNetworkError, message);
      case ErrorCode::deadline_exceeded: C10D_THROW_ERROR(TimeoutError, message);
      default: C10D_THROW_ERROR(DistStoreError, message);
    }
  }
}

std::string describe_keys(const std::vector<std::string>& keys) {
  std::string text;
  for (const auto& key : keys) text += (text.empty() ? "" : ", ") + key;
  return "[" + text + "]";
}

}  // namespace

RdzvStore::RdzvStore(std::shared_ptr<client::Client> client, std::uint64_t round, std::string prefix,
                     std::chrono::milliseconds timeout)
    : Store(timeout), client_(std::move(client)), round_(round), prefix_(std::move(prefix)) {
  if (!client_) throw std::invalid_argument("RdzvStore needs a client");
}

c10::intrusive_ptr<c10d::Store> RdzvStore::clone() {
  return c10::make_intrusive<RdzvStore>(client_, round_, prefix_, timeout_);
}

std::vector<std::string> RdzvStore::full(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(full(key));
  return out;
}

void RdzvStore::set(const std::string& key, const std::vector<std::uint8_t>& value) {
  translated("set '" + key + "'", [&] { space().set(full(key), to_string(value)); });
}

std::vector<std::uint8_t> RdzvStore::compareSet(const std::string& key,
                                                const std::vector<std::uint8_t>& expected,
                                                const std::vector<std::uint8_t>& desired) {
  return to_bytes(translated("compareSet '" + key + "'", [&] {
    return space().compare_set(full(key), to_string(expected), to_string(desired));
  }));
}

std::vector<std::uint8_t> RdzvStore::get(const std::string& key) {
  return to_bytes(translated(
      "get '" + key + "' (timeout " + std::to_string(timeout_.count()) + " ms)",
      [&] { return space().get(full(key), blocking(timeout_)); }));
}

std::int64_t RdzvStore::add(const std::string& key, std::int64_t value) {
  return translated("add '" + key + "'", [&] { return space().add(full(key), value); });
}

bool RdzvStore::deleteKey(const std::string& key) {
  return translated("deleteKey '" + key + "'", [&] { return space().delete_key(full(key)); });
}

bool RdzvStore::check(const std::vector<std::string>& keys) {
  return translated("check " + describe_keys(keys), [&] { return space().check(full(keys)); });
}

std::int64_t RdzvStore::getNumKeys() {
  return translated("getNumKeys", [&] { return space().num_keys(); });
}

void RdzvStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void RdzvStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  translated("wait " + describe_keys(keys) + " (timeout " + std::to_string(timeout.count()) + " ms)",
             [&] { space().wait(full(keys), blocking(timeout)); });
}

void RdzvStore::append(const std::string& key, const std::vector<std::uint8_t>& value) {
  translated("append '" + key + "'", [&] { space().append(full(key), to_string(value)); });
}

std::vector<std::vector<std::uint8_t>> RdzvStore::multiGet(const std::vector<std::string>& keys) {
  const auto values =
      translated("multiGet " + describe_keys(keys) + " (timeout " + std::to_string(timeout_.count()) + " ms)",
                 [&] { return space().multi_get(full(keys), blocking(timeout_)); });
  std::vector<std::vector<std::uint8_t>> out;
  out.reserve(values.size());
  for (const auto& value : values) out.push_back(to_bytes(value));
  return out;
}

void RdzvStore::multiSet(const std::vector<std::string>& keys,
                         const std::vector<std::vector<std::uint8_t>>& values) {
  if (keys.size() != values.size()) {
    C10D_THROW_ERROR(DistStoreError, "rdzv store: multiSet got " + std::to_string(keys.size()) +
                                         " keys but " + std::to_string(values.size()) + " values");
  }
  std::vector<std::pair<std::string, client::Bytes>> entries;
  entries.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) entries.emplace_back(full(keys[i]), to_string(values[i]));
  translated("multiSet " + describe_keys(keys), [&] { space().multi_set(entries); });
}

void RdzvStore::queuePush(const std::string& key, const std::vector<std::uint8_t>& value) {
  translated("queuePush '" + key + "'", [&] { space().queue_push(full(key), to_string(value)); });
}

std::vector<std::uint8_t> RdzvStore::queuePop(const std::string& key, bool block) {
  const auto value = translated("queuePop '" + key + "'",
                                [&] { return space().queue_pop(full(key), block, blocking(timeout_)); });
  if (!value) C10_THROW_ERROR(DistQueueEmptyError, "rdzv store: queue '" + key + "' is empty");
  return to_bytes(*value);
}

std::int64_t RdzvStore::queueLen(const std::string& key) {
  return translated("queueLen '" + key + "'", [&] { return space().queue_len(full(key)); });
}

std::vector<std::string> RdzvStore::listKeys() {
  const auto keys = translated("listKeys", [&] { return space().list_keys(); });
  std::vector<std::string> mine;
  for (const auto& key : keys) {
    if (key.starts_with(prefix_)) mine.push_back(key.substr(prefix_.size()));
  }
  return mine;
}

void RdzvStore::barrier(const std::string& key, std::int64_t world_size,
                        const std::chrono::milliseconds& timeout) {
  translated("barrier '" + key + "' of " + std::to_string(world_size) + " (timeout " +
                 std::to_string(timeout.count()) + " ms)",
             [&] { space().barrier(full(key), world_size, blocking(timeout)); });
}

}  // namespace llmrdzv::dist
