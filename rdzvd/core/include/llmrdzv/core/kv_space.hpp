// One key-value space of a rendezvous (round 0, or one round): the c10d::Store operations, the
// queues, and the calls blocked on them. A blocked call is a registered waiter with a callback and
// a timer, never a thread; writes wake exactly the waiters watching the written key.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "llmrdzv/core/clock.hpp"
#include "llmrdzv/core/core_metrics.hpp"
#include "llmrdzv/core/limits.hpp"
#include "llmrdzv/core/status.hpp"
#include "llmrdzv/core/timer_queue.hpp"
#include "llmrdzv/core/types.hpp"

namespace llmrdzv::core {

// Resource use of one rendezvous, shared by its spaces so limits hold across them.
struct Usage {
  std::int64_t keys = 0;   // keys plus non-empty queues
  std::int64_t bytes = 0;  // key and value bytes, and the keys blocked calls hold
  std::uint32_t waiters = 0;
};

// What a space borrows from its owner. All references outlive the space.
struct KvContext {
  const Limits& limits;
  Usage& usage;
  Usage* owner_usage;  // site mode: the totals of every rendezvous of this one's uid; else null
  TimerQueue& timers;
  const Clock& clock;
  std::uint64_t& next_waiter_id;
  CoreCounters& counters;  // limits hit
};

class KvSpace {
 public:
  explicit KvSpace(KvContext context) : ctx_(context) {}
  KvSpace(const KvSpace&) = delete;
  KvSpace& operator=(const KvSpace&) = delete;
  // Fails remaining waiters with `closing_status` and returns the space's usage to the owner.
  ~KvSpace();

  // Set before destruction to tell blocked callers why the space went away.
  void set_closing_status(Status status) { closing_status_ = std::move(status); }

  Status set(const std::string& key, std::string value);
  Result<std::int64_t> add(const std::string& key, std::int64_t delta);
  Result<std::string> compare_set(const std::string& key, const std::string& expected,
                                  std::string desired);
  Result<bool> check(const std::vector<std::string>& keys) const;
  Result<bool> delete_key(const std::string& key);
  std::int64_t num_keys() const { return std::int64_t(data_.size()); }
  std::vector<std::string> list_keys() const;
  Status append(const std::string& key, const std::string& value);
  Status multi_set(std::vector<std::pair<std::string, std::string>> entries);
  Status queue_push(const std::string& key, std::string value);
  Result<std::int64_t> queue_len(const std::string& key) const;

  // Blocking calls: complete `done` now or later; return the waiter id when blocked, else 0.
  // timeout 0 means "do not wait" (Get/MultiGet/QueuePop: NOT_FOUND, Wait: DEADLINE_EXCEEDED).
  std::uint64_t get(const std::string& key, Millis timeout, KvCallback done);
  std::uint64_t multi_get(const std::vector<std::string>& keys, Millis timeout, KvCallback done);
  std::uint64_t wait(const std::vector<std::string>& keys, Millis timeout, KvCallback done);
  std::uint64_t barrier(const std::string& key, std::int64_t world_size, Millis timeout,
                        KvCallback done);
  std::uint64_t queue_pop(const std::string& key, bool block, Millis timeout, KvCallback done);

  // Completes the waiter with `status` if it is still blocked; false if it is not.
  bool cancel(std::uint64_t waiter_id, const Status& status);

  std::int64_t bytes() const { return bytes_; }
  std::int64_t key_count() const { return std::int64_t(data_.size() + queues_.size()); }

 private:
  enum class WaitKind { values, presence, threshold, pop };
  struct Waiter {
    WaitKind kind = WaitKind::values;
    std::vector<std::string> keys;  // in request order (values/presence), or the one key
    std::size_t missing = 0;
    std::int64_t threshold = 0;
    std::int64_t held_bytes = 0;  // charged to the byte limits while blocked (see register_waiter)
    KvCallback done;
    TimerQueue::Key timer{};
    std::multimap<std::int64_t, std::uint64_t>::iterator threshold_pos{};
  };

  Status check_key(const std::string& key) const;
  Status check_keys(const std::vector<std::string>& keys) const;
  // Limits for replacing (or creating) `key`'s value with one of `new_size` bytes, with room for
  // `reserve` bytes more (what a barrier then holds while blocked).
  Status check_room(const std::string& key, std::size_t old_size, bool creates, std::size_t new_size,
                    std::int64_t reserve = 0) const;
  // max_bytes of the rendezvous and, in site mode, max_bytes_per_user of its uid, for `growth`
  // more bytes; `what` ("storing key 'k'") starts the message.
  Status check_bytes(std::int64_t growth, const std::string& what) const;
  void store(const std::string& key, std::string value);
  // add's arithmetic without storing: the integer at `key` (absent = 0) plus delta.
  Result<std::int64_t> sum(const std::string& key, std::int64_t delta) const;
  // Stores `number` as decimal text if the limits have room for it and `reserve` bytes more.
  Status store_number(const std::string& key, std::int64_t number, std::int64_t reserve);
  void key_written(const std::string& key);
  void adjust_usage(std::int64_t keys, std::int64_t bytes);
  // What a blocked call on `keys` is charged, and whether the byte limits have room for it.
  static std::int64_t held_bytes(const std::vector<std::string>& keys);
  Status check_held(const std::vector<std::string>& keys) const;
  // The byte limits' count alone (bytes that are not stored values: a blocked call's keys).
  void charge(std::int64_t bytes);

  std::uint64_t block_on_keys(WaitKind kind, const std::vector<std::string>& keys, Millis timeout,
                              KvCallback done);
  Status check_waiter_limits(Millis timeout) const;  // max_waiters, max_timeout_ms
  std::uint64_t register_waiter(Waiter waiter, Millis timeout, const std::string& what);
  // Counts the distinct missing keys of the waiter and watches each; 0 means all present.
  std::size_t watch_missing(std::uint64_t id, Waiter& waiter);
  // The values of `keys` (all present), or RESOURCE_EXHAUSTED when together they exceed
  // max_reply_bytes; nothing is copied then.
  Result<std::vector<std::string>> values_of(const std::vector<std::string>& keys) const;
  // Completes a call of `kind` (values or presence) whose keys all exist.
  void answer(WaitKind kind, const std::vector<std::string>& keys, const KvCallback& done) const;
  // Unlinks a waiter from every watch list and its timer, and returns it.
  Waiter take(std::unordered_map<std::uint64_t, Waiter>::iterator it);
  void complete(std::uint64_t id, const Status& status, std::vector<std::string> values);

  KvContext ctx_;
  std::unordered_map<std::string, std::string> data_;
  std::unordered_map<std::string, std::deque<std::string>> queues_;
  std::int64_t bytes_ = 0;
  std::unordered_map<std::uint64_t, Waiter> waiters_;
  std::unordered_map<std::string, std::set<std::uint64_t>> presence_watch_;
  std::unordered_map<std::string, std::multimap<std::int64_t, std::uint64_t>> threshold_watch_;
  std::unordered_map<std::string, std::set<std::uint64_t>> pop_watch_;  // ids ascend = FIFO
  Status closing_status_{Code::aborted, "the key-value space was dropped"};
};

// "limit <name> (<limit>) exceeded: <what>" as RESOURCE_EXHAUSTED, counted in `counters`.
Status limit_exceeded(CoreCounters& counters, const char* name, std::uint64_t limit, const std::string& what);

}  // namespace llmrdzv::core
