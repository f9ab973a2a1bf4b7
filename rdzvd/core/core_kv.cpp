// Core: the key-value entry points. Each resolves scope and round to a space, then delegates
// to KvSpace (see kv_space.hpp for the semantics).
#include "llmrdzv/core/core.hpp"

#include "rendezvous.hpp"

namespace llmrdzv::core {

Result<KvSpace*> Core::space_for(const Scope& scope, std::uint64_t round, std::string* rdzv_key) {
  auto found = find(scope);
  if (!found.ok()) return found.status();
  Rendezvous& rdzv = *found.value();
  touch(rdzv);
  if (rdzv_key) *rdzv_key = rdzv.key;
  if (round == 0) return rdzv.global_space.get();
  if (round > rdzv.round)
    return error(Code::invalid_argument, "round " + std::to_string(round) + " has not started (latest round " +
                                             std::to_string(rdzv.round) + ")");
  if (round < rdzv.round || !rdzv.round_space)
    return error(Code::aborted, "round " + std::to_string(round) + " of rendezvous '" + rdzv.id + "' is closed");
  return rdzv.round_space.get();
}

template <class Op>
auto Core::with_space(const Scope& scope, std::uint64_t round, Op op) {
  using Reply = decltype(op(std::declval<KvSpace&>()));
  auto space = space_for(scope, round);
  if (!space.ok()) return Reply(space.status());
  return op(*space.value());
}

template <class Op>
WaiterRef Core::blocking(const Scope& scope, std::uint64_t round, const KvCallback& done, Op op) {
  WaiterRef ref;
  ref.round = round;
  auto space = space_for(scope, round, &ref.rdzv_key);
  if (!space.ok()) {
    done(space.status(), {});
    return ref;
  }
  ref.id = op(*space.value());
  return ref;
}

Status Core::set(const Scope& scope, std::uint64_t round, const std::string& key, std::string value) {
  return with_space(scope, round, [&](KvSpace& space) { return space.set(key, std::move(value)); });
}

Result<std::int64_t> Core::add(const Scope& scope, std::uint64_t round, const std::string& key, std::int64_t delta) {
  return with_space(scope, round, [&](KvSpace& space) { return space.add(key, delta); });
}

Result<std::string> Core::compare_set(const Scope& scope, std::uint64_t round, const std::string& key,
                                      const std::string& expected, std::string desired) {
  return with_space(scope, round,
                    [&](KvSpace& space) { return space.compare_set(key, expected, std::move(desired)); });
}

Result<bool> Core::check(const Scope& scope, std::uint64_t round, const std::vector<std::string>& keys) {
  return with_space(scope, round, [&](KvSpace& space) { return space.check(keys); });
}

Result<bool> Core::delete_key(const Scope& scope, std::uint64_t round, const std::string& key) {
  return with_space(scope, round, [&](KvSpace& space) { return space.delete_key(key); });
}

Result<std::int64_t> Core::num_keys(const Scope& scope, std::uint64_t round) {
  return with_space(scope, round, [&](KvSpace& space) { return Result<std::int64_t>(space.num_keys()); });
}

Result<std::vector<std::string>> Core::list_keys(const Scope& scope, std::uint64_t round) {
  return with_space(scope, round,
                    [&](KvSpace& space) { return Result<std::vector<std::string>>(space.list_keys()); });
}

Status Core::append(const Scope& scope, std::uint64_t round, const std::string& key, const std::string& value) {
  return with_space(scope, round, [&](KvSpace& space) { return space.append(key, value); });
}

Status Core::multi_set(const Scope& scope, std::uint64_t round,
                       std::vector<std::pair<std::string, std::string>> entries) {
  return with_space(scope, round, [&](KvSpace& space) { return space.multi_set(std::move(entries)); });
}

Status Core::queue_push(const Scope& scope, std::uint64_t round, const std::string& key, std::string value) {
  return with_space(scope, round, [&](KvSpace& space) { return space.queue_push(key, std::move(value)); });
}

Result<std::int64_t> Core::queue_len(const Scope& scope, std::uint64_t round, const std::string& key) {
  return with_space(scope, round, [&](KvSpace& space) { return space.queue_len(key); });
}

WaiterRef Core::get(const Scope& scope, std::uint64_t round, const std::string& key, std::uint32_t timeout_ms,
                    KvCallback done) {
  return blocking(scope, round, done,
                  [&](KvSpace& space) { return space.get(key, Millis(timeout_ms), std::move(done)); });
}

WaiterRef Core::multi_get(const Scope& scope, std::uint64_t round, const std::vector<std::string>& keys,
                          std::uint32_t timeout_ms, KvCallback done) {
  return blocking(scope, round, done,
                  [&](KvSpace& space) { return space.multi_get(keys, Millis(timeout_ms), std::move(done)); });
}

WaiterRef Core::wait(const Scope& scope, std::uint64_t round, const std::vector<std::string>& keys,
                     std::uint32_t timeout_ms, KvCallback done) {
  return blocking(scope, round, done,
                  [&](KvSpace& space) { return space.wait(keys, Millis(timeout_ms), std::move(done)); });
}

WaiterRef Core::barrier(const Scope& scope, std::uint64_t round, const std::string& key, std::int64_t world_size,
                        std::uint32_t timeout_ms, KvCallback done) {
  const Millis timeout = timeout_ms ? Millis(timeout_ms) : settings_.wait_timeout;
  return blocking(scope, round, done,
                  [&](KvSpace& space) { return space.barrier(key, world_size, timeout, std::move(done)); });
}

WaiterRef Core::queue_pop(const Scope& scope, std::uint64_t round, const std::string& key, bool block,
                          std::uint32_t timeout_ms, KvCallback done) {
  const Millis timeout = timeout_ms ? Millis(timeout_ms) : settings_.wait_timeout;
  return blocking(scope, round, done,
                  [&](KvSpace& space) { return space.queue_pop(key, block, timeout, std::move(done)); });
}

}  // namespace llmrdzv::core
