// The key-value calls of one round's space. Reads, set-like writes and deletes are idempotent
// and retried on UNAVAILABLE; add, append, compare_set, barrier and queue ops are not (a retry
// could apply them twice). Calls that block (get and multi_get with a timeout, wait, barrier,
// blocking queue_pop) ride on the member's Session stream when the daemon takes them there, so
// a member keeps one live gRPC call however many waits it has open.
#include "client_impl.hpp"

namespace llmrdzv::client {
namespace {

using detail::Idempotent;
using Stub = llmrdzv::v1::Rendezvous::Stub;
constexpr std::chrono::milliseconds kNonBlocking{0};

// On the wire a barrier or blocking queue pop with timeout 0 waits for the daemon's
// wait_timeout, which the client does not know and so could not wait for: it asks for a limit.
void require_wait_limit(std::chrono::milliseconds timeout, const char* op) {
  if (timeout <= kNonBlocking)
    throw RdzvError(ErrorCode::invalid_argument, std::string(op) + ": the timeout must be > 0 ms (it waits)");
}

template <class Request, class Response>
using StubMethod = grpc::Status (Stub::*)(grpc::ClientContext*, const Request&, Response*);

template <class Request, class Response>
Response unary(const Client::Impl& impl, std::string_view op, Idempotent idempotent,
               std::chrono::milliseconds blocking, const Request& request, StubMethod<Request, Response> method) {
  Response response;
  impl.call(op, idempotent, blocking, [&](grpc::ClientContext& context) {
    return ((*impl.connection.stub).*method)(&context, request, &response);
  });
  return response;
}

template <class Request>
Request scoped(const Client::Impl& impl, std::uint64_t round) {
  Request request;
  *request.mutable_scope() = impl.scope;
  request.set_round(round);
  return request;
}

void add_keys(google::protobuf::RepeatedPtrField<std::string>* out, const std::vector<std::string>& keys) {
  for (const auto& key : keys) *out->Add() = key;
}

// Runs `call` on the member's Session stream and returns its values, or nullopt when the daemon
// does not take calls there or no open session can carry it (the caller then makes the unary
// call). Errors throw, as the unary call's would.
std::optional<std::vector<std::string>> on_session(const Client::Impl& impl, std::string_view op,
                                                   std::chrono::milliseconds timeout, llmrdzv::v1::SessionCall call) {
  const auto session = impl.connection.features.session_calls ? impl.current_session() : nullptr;
  if (!session) return std::nullopt;
  auto result = session->call(std::move(call), impl.options.call_deadline + timeout);
  if (!result) return std::nullopt;
  if (!result->status.ok()) throw detail::to_error(result->status, op, impl.connection.endpoint);
  return std::move(result->values);
}

// The first value of a call that returns one (get, queue_pop).
Bytes single(std::vector<std::string>&& values) { return values.empty() ? Bytes() : std::move(values.front()); }

}  // namespace

void KvSpace::set(const std::string& key, const Bytes& value) const {
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::SetRequest>(impl, round_);
  request.set_key(key);
  request.set_value(value);
  unary(impl, "set", Idempotent::yes, kNonBlocking, request, &Stub::Set);
}

Bytes KvSpace::get(const std::string& key, std::chrono::milliseconds timeout) const {
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::GetRequest>(impl, round_);
  request.set_key(key);
  request.set_timeout_ms(detail::wire_timeout(timeout, "get"));
  if (timeout > kNonBlocking) {
    llmrdzv::v1::SessionCall call;
    *call.mutable_get() = request;
    if (auto values = on_session(impl, "get", timeout, std::move(call))) return single(std::move(*values));
  }
  return unary(impl, "get", Idempotent::yes, timeout, request, &Stub::Get).value();
}

std::int64_t KvSpace::add(const std::string& key, std::int64_t delta) const {
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::AddRequest>(impl, round_);
  request.set_key(key);
  request.set_delta(delta);
  return unary(impl, "add", Idempotent::no, kNonBlocking, request, &Stub::Add).value();
}

Bytes KvSpace::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) const {
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::CompareSetRequest>(impl, round_);
  request.set_key(key);
  request.set_expected(expected);
  request.set_desired(desired);
  return unary(impl, "compare_set", Idempotent::no, kNonBlocking, request, &Stub::CompareSet).value();
}

bool KvSpace::check(const std::vector<std::string>& keys) const {
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::CheckRequest>(impl, round_);
  add_keys(request.mutable_keys(), keys);
  return unary(impl, "check", Idempotent::yes, kNonBlocking, request, &Stub::Check).all_present();
}

void KvSpace::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) const {
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::WaitRequest>(impl, round_);
  add_keys(request.mutable_keys(), keys);
  request.set_timeout_ms(detail::wire_timeout(timeout, "wait"));
  llmrdzv::v1::SessionCall call;
  *call.mutable_wait() = request;
  if (on_session(impl, "wait", timeout, std::move(call))) return;
  unary(impl, "wait", Idempotent::yes, timeout, request, &Stub::Wait);
}

bool KvSpace::delete_key(const std::string& key) const {
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::DeleteKeyRequest>(impl, round_);
  request.set_key(key);
  return unary(impl, "delete_key", Idempotent::yes, kNonBlocking, request, &Stub::DeleteKey).deleted();
}

std::int64_t KvSpace::num_keys() const {
  const auto& impl = *client_->impl_;
  const auto request = scoped<llmrdzv::v1::NumKeysRequest>(impl, round_);
  return unary(impl, "num_keys", Idempotent::yes, kNonBlocking, request, &Stub::NumKeys).num_keys();
}

std::vector<std::string> KvSpace::list_keys() const {
  const auto& impl = *client_->impl_;
  const auto request = scoped<llmrdzv::v1::ListKeysRequest>(impl, round_);
  const auto response = unary(impl, "list_keys", Idempotent::yes, kNonBlocking, request, &Stub::ListKeys);
  return {response.keys().begin(), response.keys().end()};
}

void KvSpace::append(const std::string& key, const Bytes& value) const {
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::AppendRequest>(impl, round_);
  request.set_key(key);
  request.set_value(value);
  unary(impl, "append", Idempotent::no, kNonBlocking, request, &Stub::Append);
}

std::vector<Bytes> KvSpace::multi_get(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) const {
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::MultiGetRequest>(impl, round_);
  add_keys(request.mutable_keys(), keys);
  request.set_timeout_ms(detail::wire_timeout(timeout, "multi_get"));
  if (timeout > kNonBlocking) {
    llmrdzv::v1::SessionCall call;
    *call.mutable_multi_get() = request;
    if (auto values = on_session(impl, "multi_get", timeout, std::move(call))) return std::move(*values);
  }
  const auto response = unary(impl, "multi_get", Idempotent::yes, timeout, request, &Stub::MultiGet);
  return {response.values().begin(), response.values().end()};
}

void KvSpace::multi_set(const std::vector<std::pair<std::string, Bytes>>& entries) const {
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::MultiSetRequest>(impl, round_);
  for (const auto& [key, value] : entries) {
    auto* entry = request.add_entries();
    entry->set_key(key);
    entry->set_value(value);
  }
  unary(impl, "multi_set", Idempotent::yes, kNonBlocking, request, &Stub::MultiSet);
}

void KvSpace::barrier(const std::string& key, std::int64_t world_size, std::chrono::milliseconds timeout) const {
  require_wait_limit(timeout, "barrier");
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::BarrierRequest>(impl, round_);
  request.set_key(key);
  request.set_world_size(world_size);
  request.set_timeout_ms(detail::wire_timeout(timeout, "barrier"));
  llmrdzv::v1::SessionCall call;
  *call.mutable_barrier() = request;
  if (on_session(impl, "barrier", timeout, std::move(call))) return;
  unary(impl, "barrier", Idempotent::no, timeout, request, &Stub::Barrier);
}

void KvSpace::queue_push(const std::string& key, const Bytes& value) const {
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::QueuePushRequest>(impl, round_);
  request.set_key(key);
  request.set_value(value);
  unary(impl, "queue_push", Idempotent::no, kNonBlocking, request, &Stub::QueuePush);
}

std::optional<Bytes> KvSpace::queue_pop(const std::string& key, bool block, std::chrono::milliseconds timeout) const {
  if (block) require_wait_limit(timeout, "queue_pop");
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::QueuePopRequest>(impl, round_);
  request.set_key(key);
  request.set_block(block);
  request.set_timeout_ms(detail::wire_timeout(timeout, "queue_pop"));
  if (block) {
    llmrdzv::v1::SessionCall call;
    *call.mutable_queue_pop() = request;
    if (auto values = on_session(impl, "queue_pop", timeout, std::move(call))) return single(std::move(*values));
  }
  try {
    return unary(impl, "queue_pop", Idempotent::no, block ? timeout : kNonBlocking, request, &Stub::QueuePop)
        .value();
  } catch (const RdzvError& error) {
    if (!block && error.code() == ErrorCode::not_found) return std::nullopt;
    throw;
  }
}

std::int64_t KvSpace::queue_len(const std::string& key) const {
  const auto& impl = *client_->impl_;
  auto request = scoped<llmrdzv::v1::QueueLenRequest>(impl, round_);
  request.set_key(key);
  return unary(impl, "queue_len", Idempotent::yes, kNonBlocking, request, &Stub::QueueLen).length();
}

}  // namespace llmrdzv::client
