// c10d::Store semantics over one space, with callback waiters (see kv_space.hpp).
#include "llmrdzv/core/kv_space.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

namespace llmrdzv::core {
namespace {

std::optional<std::int64_t> parse_integer(const std::string& text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string quoted(const std::string& key) {
  constexpr std::size_t kShown = 64;
  return "'" + (key.size() > kShown ? key.substr(0, kShown) + "..." : key) + "'";
}

}  // namespace

Status limit_exceeded(CoreCounters& counters, const char* name, std::uint64_t limit, const std::string& what) {
  ++counters.limits_hit[name];
  return error(Code::resource_exhausted,
               "limit " + std::string(name) + " (" + std::to_string(limit) + ") exceeded: " + what);
}

KvSpace::~KvSpace() {
  while (!waiters_.empty()) {
    const std::uint64_t id = waiters_.begin()->first;
    complete(id, closing_status_, {});
  }
  adjust_usage(-key_count(), -bytes_);
}

void KvSpace::adjust_usage(std::int64_t keys, std::int64_t bytes) {
  ctx_.usage.keys += keys;
  if (ctx_.owner_usage) ctx_.owner_usage->keys += keys;
  charge(bytes);
  bytes_ += bytes;
}

void KvSpace::charge(std::int64_t bytes) {
  ctx_.usage.bytes += bytes;
  if (ctx_.owner_usage) ctx_.owner_usage->bytes += bytes;
}

Status KvSpace::check_bytes(std::int64_t growth, const std::string& what) const {
  if (ctx_.usage.bytes + growth > std::int64_t(ctx_.limits.max_bytes))
    return limit_exceeded(ctx_.counters, "max_bytes", ctx_.limits.max_bytes,
                          what + " would bring the rendezvous to " + std::to_string(ctx_.usage.bytes + growth) + " bytes");
  if (ctx_.owner_usage && ctx_.owner_usage->bytes + growth > std::int64_t(ctx_.limits.max_bytes_per_user))
    return limit_exceeded(ctx_.counters, "max_bytes_per_user", ctx_.limits.max_bytes_per_user,
                          what + " would bring this user's rendezvous to " +
                              std::to_string(ctx_.owner_usage->bytes + growth) + " bytes");
  return Status::Ok();
}

Status KvSpace::check_key(const std::string& key) const {
  if (key.empty()) return error(Code::invalid_argument, "key is empty");
  if (key.size() > ctx_.limits.max_key_length)
    return limit_exceeded(ctx_.counters, "max_key_length", ctx_.limits.max_key_length,
                          "key of " + std::to_string(key.size()) + " bytes");
  return Status::Ok();
}

Status KvSpace::check_keys(const std::vector<std::string>& keys) const {
  if (keys.empty()) return error(Code::invalid_argument, "no keys given");
  if (keys.size() > ctx_.limits.max_keys_per_request)
    return limit_exceeded(ctx_.counters, "max_keys_per_request", ctx_.limits.max_keys_per_request,
                          std::to_string(keys.size()) + " keys in one request");
  for (const auto& key : keys)
    if (auto status = check_key(key); !status.ok()) return status;
  return Status::Ok();
}

Status KvSpace::check_room(const std::string& key, std::size_t old_size, bool creates,
                           std::size_t new_size, std::int64_t reserve) const {
  if (new_size > ctx_.limits.max_value_size)
    return limit_exceeded(ctx_.counters, "max_value_size", ctx_.limits.max_value_size,
                          "value of " + std::to_string(new_size) + " bytes for key " + quoted(key));
  if (creates && ctx_.usage.keys + 1 > std::int64_t(ctx_.limits.max_keys))
    return limit_exceeded(ctx_.counters, "max_keys", ctx_.limits.max_keys, "the rendezvous holds that many keys");
  const std::int64_t growth =
      std::int64_t(new_size) - std::int64_t(old_size) + (creates ? std::int64_t(key.size()) : 0);
  return check_bytes(growth + reserve, "storing key " + quoted(key) +
                                           (reserve ? " and blocking on it (" + std::to_string(reserve) + " bytes)" : ""));
}

void KvSpace::store(const std::string& key, std::string value) {
  auto [it, inserted] = data_.try_emplace(key);
  adjust_usage(inserted ? 1 : 0, std::int64_t(value.size()) - std::int64_t(it->second.size()) +
                                     (inserted ? std::int64_t(key.size()) : 0));
  it->second = std::move(value);
  key_written(key);
}

Status KvSpace::set(const std::string& key, std::string value) {
  if (auto status = check_key(key); !status.ok()) return status;
  const auto it = data_.find(key);
  const bool creates = it == data_.end();
  if (auto status = check_room(key, creates ? 0 : it->second.size(), creates, value.size()); !status.ok())
    return status;
  store(key, std::move(value));
  return Status::Ok();
}

Result<std::int64_t> KvSpace::sum(const std::string& key, std::int64_t delta) const {
  if (auto status = check_key(key); !status.ok()) return status;
  const auto it = data_.find(key);
  std::int64_t current = 0;
  if (it != data_.end()) {
    const auto parsed = parse_integer(it->second);
    if (!parsed)
      return error(Code::invalid_argument, "add: key " + quoted(key) + " does not hold an integer");
    current = *parsed;
  }
  if ((delta > 0 && current > std::numeric_limits<std::int64_t>::max() - delta) ||
      (delta < 0 && current < std::numeric_limits<std::int64_t>::min() - delta))
    return error(Code::invalid_argument, "add: key " + quoted(key) + " would overflow int64");
  return current + delta;
}

Status KvSpace::store_number(const std::string& key, std::int64_t number, std::int64_t reserve) {
  std::string text = std::to_string(number);
  const auto it = data_.find(key);
  const bool creates = it == data_.end();
  if (auto status = check_room(key, creates ? 0 : it->second.size(), creates, text.size(), reserve); !status.ok())
    return status;
  store(key, std::move(text));
  return Status::Ok();
}

Result<std::int64_t> KvSpace::add(const std::string& key, std::int64_t delta) {
  const auto total = sum(key, delta);
  if (!total.ok()) return total;
  if (auto status = store_number(key, total.value(), 0); !status.ok()) return status;
  return total;
}

Result<std::string> KvSpace::compare_set(const std::string& key, const std::string& expected,
                                         std::string desired) {
  if (auto status = check_key(key); !status.ok()) return status;
  const auto it = data_.find(key);
  if (it == data_.end() ? !expected.empty() : it->second != expected)
    return it == data_.end() ? expected : it->second;
  if (auto status = set(key, desired); !status.ok()) return status;
  return desired;
}

Result<bool> KvSpace::check(const std::vector<std::string>& keys) const {
  if (auto status = check_keys(keys); !status.ok()) return status;
  return std::all_of(keys.begin(), keys.end(), [&](const auto& key) { return data_.contains(key); });
}

Result<bool> KvSpace::delete_key(const std::string& key) {
  if (auto status = check_key(key); !status.ok()) return status;
  const auto it = data_.find(key);
  if (it == data_.end()) return false;
  adjust_usage(-1, -std::int64_t(key.size() + it->second.size()));
  data_.erase(it);
  return true;
}

std::vector<std::string> KvSpace::list_keys() const {
  std::vector<std::string> keys;
  keys.reserve(data_.size());
  for (const auto& [key, value] : data_) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

Status KvSpace::append(const std::string& key, const std::string& value) {
  if (auto status = check_key(key); !status.ok()) return status;
  const auto it = data_.find(key);
  if (it == data_.end()) return set(key, value);
  if (auto status = check_room(key, it->second.size(), false, it->second.size() + value.size());
      !status.ok())
    return status;
  std::string joined = it->second + value;
  store(key, std::move(joined));
  return Status::Ok();
}

Status KvSpace::multi_set(std::vector<std::pair<std::string, std::string>> entries) {
  if (entries.empty()) return error(Code::invalid_argument, "no entries given");
  if (entries.size() > ctx_.limits.max_keys_per_request)
    return limit_exceeded(ctx_.counters, "max_keys_per_request", ctx_.limits.max_keys_per_request,
                          std::to_string(entries.size()) + " entries in one request");
  // All or nothing: check the whole batch against the limits before writing any of it.
  std::int64_t new_keys = 0, growth = 0;
  std::set<std::string_view> seen;
  for (const auto& [key, value] : entries) {
    if (auto status = check_key(key); !status.ok()) return status;
    if (value.size() > ctx_.limits.max_value_size)
      return check_room(key, 0, false, value.size());
    const auto it = data_.find(key);
    if (!seen.insert(key).second)
      return error(Code::invalid_argument, "multi_set: key " + quoted(key) + " given twice");
    new_keys += it == data_.end() ? 1 : 0;
    growth += std::int64_t(value.size()) +
              (it == data_.end() ? std::int64_t(key.size()) : -std::int64_t(it->second.size()));
  }
  if (ctx_.usage.keys + new_keys > std::int64_t(ctx_.limits.max_keys))
    return limit_exceeded(ctx_.counters, "max_keys", ctx_.limits.max_keys, "multi_set would exceed it");
  if (auto status = check_bytes(growth, "multi_set"); !status.ok()) return status;
  for (auto& [key, value] : entries) store(key, std::move(value));
  return Status::Ok();
}

Status KvSpace::queue_push(const std::string& key, std::string value) {
  if (auto status = check_key(key); !status.ok()) return status;
  const auto it = queues_.find(key);
  const bool creates = it == queues_.end();
  if (auto status = check_room(key, 0, creates, value.size()); !status.ok()) return status;
  if (auto watch = pop_watch_.find(key); watch != pop_watch_.end()) {
    const std::uint64_t id = *watch->second.begin();
    std::vector<std::string> values;
    values.push_back(std::move(value));
    complete(id, Status::Ok(), std::move(values));
    return Status::Ok();
  }
  adjust_usage(creates ? 1 : 0, std::int64_t(value.size()) + (creates ? std::int64_t(key.size()) : 0));
  queues_[key].push_back(std::move(value));
  return Status::Ok();
}

Result<std::int64_t> KvSpace::queue_len(const std::string& key) const {
  if (auto status = check_key(key); !status.ok()) return status;
  const auto it = queues_.find(key);
  return it == queues_.end() ? 0 : std::int64_t(it->second.size());
}

// Counted before anything is copied: the copies are made under the core's lock, and a reply
// needs its values once more while gRPC serialises it.
Result<std::vector<std::string>> KvSpace::values_of(const std::vector<std::string>& keys) const {
  std::uint64_t bytes = 0;
  for (const auto& key : keys) bytes += data_.at(key).size();
  if (bytes > ctx_.limits.max_reply_bytes)
    return limit_exceeded(ctx_.counters, "max_reply_bytes", ctx_.limits.max_reply_bytes,
                          "the values of " + std::to_string(keys.size()) + " key(s) hold " + std::to_string(bytes) +
                              " bytes");
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (const auto& key : keys) values.push_back(data_.at(key));
  return values;
}

void KvSpace::answer(WaitKind kind, const std::vector<std::string>& keys, const KvCallback& done) const {
  if (kind != WaitKind::values) {
    done(Status::Ok(), {});
    return;
  }
  auto values = values_of(keys);
  if (values.ok())
    done(Status::Ok(), std::move(values.value()));
  else
    done(values.status(), {});
}

std::uint64_t KvSpace::get(const std::string& key, Millis timeout, KvCallback done) {
  return block_on_keys(WaitKind::values, {key}, timeout, std::move(done));
}

std::uint64_t KvSpace::multi_get(const std::vector<std::string>& keys, Millis timeout, KvCallback done) {
  return block_on_keys(WaitKind::values, keys, timeout, std::move(done));
}

std::uint64_t KvSpace::wait(const std::vector<std::string>& keys, Millis timeout, KvCallback done) {
  return block_on_keys(WaitKind::presence, keys, timeout, std::move(done));
}

std::uint64_t KvSpace::block_on_keys(WaitKind kind, const std::vector<std::string>& keys,
                                     Millis timeout, KvCallback done) {
  if (auto status = check_keys(keys); !status.ok()) {
    done(status, {});
    return 0;
  }
  // A key named twice would have its value copied into the reply twice: a small MultiGet naming
  // one large value thousands of times made the daemon allocate gigabytes.
  if (kind == WaitKind::values) {
    std::set<std::string_view> seen;
    for (const auto& key : keys)
      if (!seen.insert(key).second) {
        done(error(Code::invalid_argument, "multi_get: key " + quoted(key) + " given twice"), {});
        return 0;
      }
  }
  const auto missing = std::find_if(keys.begin(), keys.end(), [&](const auto& k) { return !data_.contains(k); });
  if (missing == keys.end()) {
    answer(kind, keys, done);
    return 0;
  }
  if (timeout.count() == 0) {
    if (kind == WaitKind::values)
      done(error(Code::not_found, "key " + quoted(*missing) + " not found"), {});
    else
      done(error(Code::deadline_exceeded, "key " + quoted(*missing) + " not present (no wait)"), {});
    return 0;
  }
  Waiter waiter;
  waiter.kind = kind;
  waiter.keys = keys;
  waiter.done = std::move(done);
  return register_waiter(std::move(waiter), timeout, "key " + quoted(*missing));
}

std::uint64_t KvSpace::barrier(const std::string& key, std::int64_t world_size, Millis timeout,
                               KvCallback done) {
  if (world_size < 1) {
    done(error(Code::invalid_argument, "barrier world_size must be >= 1"), {});
    return 0;
  }
  // A barrier refused for a limit must not count as an arrival: everything it needs (a waiter,
  // and room for the new count plus the key it then holds) is checked before the count is stored.
  const auto arrivals = sum(key, 1);
  if (!arrivals.ok()) {
    done(arrivals.status(), {});
    return 0;
  }
  const bool blocks = arrivals.value() < world_size;
  Status status;
  if (blocks) status = check_waiter_limits(timeout);
  if (status.ok()) status = store_number(key, arrivals.value(), blocks ? held_bytes({key}) : 0);
  if (!status.ok() || !blocks) {
    done(status, {});
    return 0;
  }
  Waiter waiter;
  waiter.kind = WaitKind::threshold;
  waiter.keys = {key};
  waiter.threshold = world_size;
  waiter.done = std::move(done);
  return register_waiter(std::move(waiter), timeout,
                         "barrier " + quoted(key) + " (" + std::to_string(world_size) + " arrivals)");
}

std::uint64_t KvSpace::queue_pop(const std::string& key, bool block, Millis timeout, KvCallback done) {
  if (auto status = check_key(key); !status.ok()) {
    done(status, {});
    return 0;
  }
  if (auto it = queues_.find(key); it != queues_.end()) {
    std::vector<std::string> values;
    values.push_back(std::move(it->second.front()));
    it->second.pop_front();
    std::int64_t freed = std::int64_t(values.front().size());
    std::int64_t keys = 0;
    if (it->second.empty()) {
      freed += std::int64_t(key.size());
      keys = 1;
      queues_.erase(it);
    }
    adjust_usage(-keys, -freed);
    done(Status::Ok(), std::move(values));
    return 0;
  }
  if (!block || timeout.count() == 0) {
    done(error(Code::not_found, "queue " + quoted(key) + " is empty"), {});
    return 0;
  }
  Waiter waiter;
  waiter.kind = WaitKind::pop;
  waiter.keys = {key};
  waiter.done = std::move(done);
  return register_waiter(std::move(waiter), timeout, "queue " + quoted(key));
}

Status KvSpace::check_waiter_limits(Millis timeout) const {
  if (ctx_.usage.waiters >= ctx_.limits.max_waiters)
    return limit_exceeded(ctx_.counters, "max_waiters", ctx_.limits.max_waiters, "too many blocked calls on this rendezvous");
  if (timeout.count() > std::int64_t(ctx_.limits.max_timeout_ms))
    return limit_exceeded(ctx_.counters, "max_timeout_ms", ctx_.limits.max_timeout_ms, "timeout_ms=" + std::to_string(timeout.count()));
  return Status::Ok();
}

std::int64_t KvSpace::held_bytes(const std::vector<std::string>& keys) {
  std::int64_t bytes = 0;
  for (const auto& key : keys) bytes += 2 * std::int64_t(key.size());
  return bytes;
}

Status KvSpace::check_held(const std::vector<std::string>& keys) const {
  const std::int64_t bytes = held_bytes(keys);
  return check_bytes(bytes, "a blocked call holding " + std::to_string(keys.size()) + " key(s) (" +
                                std::to_string(bytes) + " bytes)");
}

// A blocked call keeps its keys twice (its own list and the watch index) until it ends: they are
// charged to max_bytes and max_bytes_per_user meanwhile, so waits on many large missing keys
// cannot hold more memory than storing them would.
std::uint64_t KvSpace::register_waiter(Waiter waiter, Millis timeout, const std::string& what) {
  if (auto status = check_waiter_limits(timeout); !status.ok()) {
    waiter.done(status, {});
    return 0;
  }
  waiter.held_bytes = held_bytes(waiter.keys);
  if (auto status = check_held(waiter.keys); !status.ok()) {
    waiter.done(status, {});
    return 0;
  }
  const std::uint64_t id = ctx_.next_waiter_id++;
  Waiter& stored = waiters_.emplace(id, std::move(waiter)).first->second;
  ++ctx_.usage.waiters;
  charge(stored.held_bytes);
  switch (stored.kind) {
    case WaitKind::values:
    case WaitKind::presence:
      stored.missing = watch_missing(id, stored);
      break;
    case WaitKind::threshold:
      stored.threshold_pos = threshold_watch_[stored.keys.front()].emplace(stored.threshold, id);
      break;
    case WaitKind::pop:
      pop_watch_[stored.keys.front()].insert(id);
      break;
  }
  const std::string message =
      "timed out after " + std::to_string(timeout.count()) + " ms waiting for " + what;
  stored.timer = ctx_.timers.schedule(ctx_.clock.now() + timeout, [this, id, message] {
    complete(id, error(Code::deadline_exceeded, message), {});
  });
  return id;
}

std::size_t KvSpace::watch_missing(std::uint64_t id, Waiter& waiter) {
  std::set<std::string_view> missing;
  for (const auto& key : waiter.keys)
    if (!data_.contains(key) && missing.insert(key).second) presence_watch_[key].insert(id);
  return missing.size();
}

void KvSpace::key_written(const std::string& key) {
  if (auto watch = presence_watch_.find(key); watch != presence_watch_.end()) {
    const std::set<std::uint64_t> ids = std::move(watch->second);
    presence_watch_.erase(watch);
    for (const std::uint64_t id : ids) {
      auto it = waiters_.find(id);
      if (it == waiters_.end() || --it->second.missing > 0) continue;
      // Every watched key appeared at some point; one may have been deleted since.
      if ((it->second.missing = watch_missing(id, it->second)) > 0) continue;
      Waiter waiter = take(it);
      answer(waiter.kind, waiter.keys, waiter.done);
    }
  }
  if (auto watch = threshold_watch_.find(key); watch != threshold_watch_.end()) {
    const auto value = parse_integer(data_.at(key));
    if (!value) return;
    std::vector<std::uint64_t> ready;
    for (auto it = watch->second.begin(); it != watch->second.end() && it->first <= *value; ++it)
      ready.push_back(it->second);
    for (const std::uint64_t id : ready) complete(id, Status::Ok(), {});
  }
}

KvSpace::Waiter KvSpace::take(std::unordered_map<std::uint64_t, Waiter>::iterator it) {
  const std::uint64_t id = it->first;
  Waiter waiter = std::move(it->second);
  waiters_.erase(it);
  --ctx_.usage.waiters;
  charge(-waiter.held_bytes);
  ctx_.timers.cancel(waiter.timer);
  switch (waiter.kind) {
    case WaitKind::values:
    case WaitKind::presence:
      for (const auto& key : waiter.keys)
        if (auto watch = presence_watch_.find(key); watch != presence_watch_.end()) {
          watch->second.erase(id);
          if (watch->second.empty()) presence_watch_.erase(watch);
        }
      break;
    case WaitKind::threshold: {
      auto watch = threshold_watch_.find(waiter.keys.front());
      watch->second.erase(waiter.threshold_pos);
      if (watch->second.empty()) threshold_watch_.erase(watch);
      break;
    }
    case WaitKind::pop: {
      auto watch = pop_watch_.find(waiter.keys.front());
      watch->second.erase(id);
      if (watch->second.empty()) pop_watch_.erase(watch);
      break;
    }
  }
  return waiter;
}

void KvSpace::complete(std::uint64_t id, const Status& status, std::vector<std::string> values) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  Waiter waiter = take(it);
  waiter.done(status, std::move(values));
}

bool KvSpace::cancel(std::uint64_t waiter_id, const Status& status) {
  if (!waiters_.contains(waiter_id)) return false;
  complete(waiter_id, status, {});
  return true;
}

}  // namespace llmrdzv::core
