// The Rendezvous service's handlers (see rendezvous_service.hpp).
#include "rendezvous_service.hpp"

#include "session_reactor.hpp"
#include "wire.hpp"

namespace llmrdzv::server {
namespace {

// A unary call that may block in the core. Finishes exactly once, from the core's callback.
class BlockingCall final : public grpc::ServerUnaryReactor {
 public:
  BlockingCall(CoreHost& host, RpcMetrics::Call call) : host_(host), call_(call) {}

  // start(core, this) registers the call with the core and returns its waiter.
  template <class Start>
  BlockingCall* begin(Start start) {
    host_.run([&](core::Core& core) { waiter_ = start(core); });
    return this;
  }

  // For the core's completion callbacks: after the lock, fill the response and finish.
  template <class Fill>
  void complete(const core::Status& status, Fill fill) {
    host_.defer([this, status, fill = std::move(fill)]() mutable {
      if (status.ok()) fill();
      const grpc::Status answer = to_grpc(status);
      host_.rpcs().finished(call_, answer.error_code());  // before Finish, which may delete this
      Finish(answer);
    });
  }

  void OnCancel() override {
    host_.run([this](core::Core& core) { core.cancel(waiter_); });
  }
  void OnDone() override { delete this; }

 private:
  CoreHost& host_;
  const RpcMetrics::Call call_;
  core::WaiterRef waiter_;  // guarded by the core lock
};

std::vector<std::string> keys_of(const google::protobuf::RepeatedPtrField<std::string>& keys) {
  return {keys.begin(), keys.end()};
}

core::KvCallback values_into(BlockingCall* call, std::string* single) {
  return [call, single](const core::Status& status, std::vector<std::string> values) {
    call->complete(status, [single, values = std::move(values)]() mutable {
      if (single && !values.empty()) *single = std::move(values.front());
    });
  };
}

}  // namespace

const std::vector<std::string>& RendezvousService::all_features() {
  static const std::vector<std::string> features{"session-join", "session-calls"};
  return features;
}

template <class Fn>
grpc::ServerUnaryReactor* RendezvousService::quick(RpcMetrics::Call call, grpc::CallbackServerContext* context,
                                                   Fn fn) {
  return answer(call, context, to_grpc(host_.run(std::move(fn))));
}

grpc::ServerUnaryReactor* RendezvousService::answer(const RpcMetrics::Call& call,
                                                    grpc::CallbackServerContext* context, const grpc::Status& status) {
  host_.rpcs().finished(call, status.error_code());
  auto* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

grpc::ServerUnaryReactor* RendezvousService::Hello(grpc::CallbackServerContext* context,
                                                   const v1::HelloRequest* request, v1::HelloResponse* response) {
  const int port = listen_port_.load();
  if (port <= 0)  // between BuildAndStart and set_listen_port: the proof would cover no port
    return answer({"Hello"}, context, grpc::Status(grpc::StatusCode::UNAVAILABLE, "rdzvd is starting"));
  // The gate let it through: its credential proves the token, so its connection is a client's.
  if (connection_limit_) connection_limit_->authenticated(context->peer());
  return quick({"Hello"}, context, [&](core::Core& core) {
    auto answer = core.hello(from_wire(*request), std::uint16_t(port));
    if (!answer.ok()) return answer.status();
    response->set_daemon_nonce(answer.value().daemon_nonce);
    response->set_port(std::uint32_t(port));
    response->set_proof(answer.value().proof);
    response->set_version(version_);
    for (const auto& feature : features_) response->add_features(feature);
    return core::Status::Ok();
  });
}

grpc::ServerUnaryReactor* RendezvousService::Join(grpc::CallbackServerContext*, const v1::JoinRequest* request,
                                                  v1::JoinResponse* response) {
  auto* call = new BlockingCall(host_, {"Join"});
  return call->begin([&](core::Core& core) {
    return core.join(from_wire(*request), [call, response](const core::Status& status, const core::Assignment& a) {
      call->complete(status, [response, a] { to_wire(a, *response); });
    });
  });
}

grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionEvent>* RendezvousService::Session(
    grpc::CallbackServerContext* context) {
  return new SessionReactor(host_, context);
}

grpc::ServerUnaryReactor* RendezvousService::Leave(grpc::CallbackServerContext* context,
                                                   const v1::LeaveRequest* request, v1::LeaveResponse*) {
  return quick({"Leave"}, context, [&](core::Core& core) {
    return core.leave(from_wire(request->scope()), request->participant_id());
  });
}

grpc::ServerUnaryReactor* RendezvousService::Set(grpc::CallbackServerContext* context, const v1::SetRequest* request,
                                                 v1::SetResponse*) {
  return quick({"Set", true}, context, [&](core::Core& core) {
    return core.set(from_wire(request->scope()), request->round(), request->key(), request->value());
  });
}

grpc::ServerUnaryReactor* RendezvousService::Get(grpc::CallbackServerContext*, const v1::GetRequest* request,
                                                 v1::GetResponse* response) {
  auto* call = new BlockingCall(host_, {"Get", true});
  return call->begin([&](core::Core& core) {
    return core.get(from_wire(request->scope()), request->round(), request->key(), request->timeout_ms(),
                    values_into(call, response->mutable_value()));
  });
}

grpc::ServerUnaryReactor* RendezvousService::Add(grpc::CallbackServerContext* context, const v1::AddRequest* request,
                                                 v1::AddResponse* response) {
  return quick({"Add", true}, context, [&](core::Core& core) {
    auto added = core.add(from_wire(request->scope()), request->round(), request->key(), request->delta());
    if (!added.ok()) return added.status();
    response->set_value(added.value());
    return core::Status::Ok();
  });
}

grpc::ServerUnaryReactor* RendezvousService::CompareSet(grpc::CallbackServerContext* context,
                                                        const v1::CompareSetRequest* request,
                                                        v1::CompareSetResponse* response) {
  return quick({"CompareSet", true}, context, [&](core::Core& core) {
    auto value = core.compare_set(from_wire(request->scope()), request->round(), request->key(),
                                  request->expected(), request->desired());
    if (!value.ok()) return value.status();
    response->set_value(std::move(value.value()));
    return core::Status::Ok();
  });
}

grpc::ServerUnaryReactor* RendezvousService::Check(grpc::CallbackServerContext* context,
                                                   const v1::CheckRequest* request, v1::CheckResponse* response) {
  return quick({"Check", true}, context, [&](core::Core& core) {
    auto present = core.check(from_wire(request->scope()), request->round(), keys_of(request->keys()));
    if (!present.ok()) return present.status();
    response->set_all_present(present.value());
    return core::Status::Ok();
  });
}

grpc::ServerUnaryReactor* RendezvousService::Wait(grpc::CallbackServerContext*, const v1::WaitRequest* request,
                                                  v1::WaitResponse*) {
  auto* call = new BlockingCall(host_, {"Wait", true});
  return call->begin([&](core::Core& core) {
    return core.wait(from_wire(request->scope()), request->round(), keys_of(request->keys()), request->timeout_ms(),
                     values_into(call, nullptr));
  });
}

grpc::ServerUnaryReactor* RendezvousService::DeleteKey(grpc::CallbackServerContext* context,
                                                       const v1::DeleteKeyRequest* request,
                                                       v1::DeleteKeyResponse* response) {
  return quick({"DeleteKey", true}, context, [&](core::Core& core) {
    auto deleted = core.delete_key(from_wire(request->scope()), request->round(), request->key());
    if (!deleted.ok()) return deleted.status();
    response->set_deleted(deleted.value());
    return core::Status::Ok();
  });
}

grpc::ServerUnaryReactor* RendezvousService::NumKeys(grpc::CallbackServerContext* context,
                                                     const v1::NumKeysRequest* request, v1::NumKeysResponse* response) {
  return quick({"NumKeys", true}, context, [&](core::Core& core) {
    auto count = core.num_keys(from_wire(request->scope()), request->round());
    if (!count.ok()) return count.status();
    response->set_num_keys(count.value());
    return core::Status::Ok();
  });
}

grpc::ServerUnaryReactor* RendezvousService::ListKeys(grpc::CallbackServerContext* context,
                                                      const v1::ListKeysRequest* request,
                                                      v1::ListKeysResponse* response) {
  return quick({"ListKeys", true}, context, [&](core::Core& core) {
    auto keys = core.list_keys(from_wire(request->scope()), request->round());
    if (!keys.ok()) return keys.status();
    for (auto& key : keys.value()) response->add_keys(std::move(key));
    return core::Status::Ok();
  });
}

grpc::ServerUnaryReactor* RendezvousService::Append(grpc::CallbackServerContext* context,
                                                    const v1::AppendRequest* request, v1::AppendResponse*) {
  return quick({"Append", true}, context, [&](core::Core& core) {
    return core.append(from_wire(request->scope()), request->round(), request->key(), request->value());
  });
}

grpc::ServerUnaryReactor* RendezvousService::MultiGet(grpc::CallbackServerContext*, const v1::MultiGetRequest* request,
                                                      v1::MultiGetResponse* response) {
  auto* call = new BlockingCall(host_, {"MultiGet", true});
  return call->begin([&](core::Core& core) {
    return core.multi_get(
        from_wire(request->scope()), request->round(), keys_of(request->keys()), request->timeout_ms(),
        [call, response](const core::Status& status, std::vector<std::string> values) {
          call->complete(status, [response, values = std::move(values)]() mutable {
            for (auto& value : values) response->add_values(std::move(value));
          });
        });
  });
}

grpc::ServerUnaryReactor* RendezvousService::MultiSet(grpc::CallbackServerContext* context,
                                                      const v1::MultiSetRequest* request, v1::MultiSetResponse*) {
  return quick({"MultiSet", true}, context, [&](core::Core& core) {
    std::vector<std::pair<std::string, std::string>> entries;
    entries.reserve(request->entries_size());
    for (const auto& entry : request->entries()) entries.emplace_back(entry.key(), entry.value());
    return core.multi_set(from_wire(request->scope()), request->round(), std::move(entries));
  });
}

grpc::ServerUnaryReactor* RendezvousService::Barrier(grpc::CallbackServerContext*, const v1::BarrierRequest* request,
                                                     v1::BarrierResponse*) {
  auto* call = new BlockingCall(host_, {"Barrier", true});
  return call->begin([&](core::Core& core) {
    return core.barrier(from_wire(request->scope()), request->round(), request->key(), request->world_size(),
                        request->timeout_ms(), values_into(call, nullptr));
  });
}

grpc::ServerUnaryReactor* RendezvousService::QueuePush(grpc::CallbackServerContext* context,
                                                       const v1::QueuePushRequest* request, v1::QueuePushResponse*) {
  return quick({"QueuePush", true}, context, [&](core::Core& core) {
    return core.queue_push(from_wire(request->scope()), request->round(), request->key(), request->value());
  });
}

grpc::ServerUnaryReactor* RendezvousService::QueuePop(grpc::CallbackServerContext*, const v1::QueuePopRequest* request,
                                                      v1::QueuePopResponse* response) {
  auto* call = new BlockingCall(host_, {"QueuePop", true});
  return call->begin([&](core::Core& core) {
    return core.queue_pop(from_wire(request->scope()), request->round(), request->key(), request->block(),
                          request->timeout_ms(), values_into(call, response->mutable_value()));
  });
}

grpc::ServerUnaryReactor* RendezvousService::QueueLen(grpc::CallbackServerContext* context,
                                                      const v1::QueueLenRequest* request,
                                                      v1::QueueLenResponse* response) {
  return quick({"QueueLen", true}, context, [&](core::Core& core) {
    auto length = core.queue_len(from_wire(request->scope()), request->round(), request->key());
    if (!length.ok()) return length.status();
    response->set_length(length.value());
    return core::Status::Ok();
  });
}

grpc::ServerUnaryReactor* RendezvousService::Status(grpc::CallbackServerContext* context,
                                                    const v1::StatusRequest* request, v1::StatusResponse* response) {
  return quick({"Status"}, context, [&](core::Core& core) {
    response->set_version(version_);
    for (const auto& feature : features_) response->add_features(feature);
    if (request->daemon_only()) {
      to_wire(core.summary(), *response);
      return core::Status::Ok();
    }
    std::optional<core::Scope> scope;
    if (request->has_scope()) scope = from_wire(request->scope());
    auto info = core.status(scope);
    if (!info.ok()) return info.status();
    to_wire(info.value(), *response);
    return core::Status::Ok();
  });
}

}  // namespace llmrdzv::server
