// The gRPC callback service llmrdzv.v1.Rendezvous over the core. Quick calls finish inline;
// blocking calls (Join, Get, Wait, MultiGet, Barrier, QueuePop) register a waiter in the core and
// finish from its callback, so no thread waits; a cancelled call cancels its waiter.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "connection_limit.hpp"
#include "core_host.hpp"
#include "llmrdzv/v1/rendezvous.grpc.pb.h"

namespace llmrdzv::server {

namespace v1 = llmrdzv::v1;

class RendezvousService final : public v1::Rendezvous::CallbackService {
 public:
  // What Status advertises in `features` (the optional protocol parts this service speaks).
  static const std::vector<std::string>& all_features();

  // `features`: what Status advertises; every part is served either way. Tests pass fewer to
  // make a client take the calls an older rdzvd would need.
  RendezvousService(CoreHost& host, std::string version, std::vector<std::string> features = all_features())
      : host_(host), version_(std::move(version)), features_(std::move(features)) {}

  // The port Hello's proof covers: the one the server listens on, known once it has started.
  void set_listen_port(int port) { listen_port_.store(port); }
  // Told of every connection that says Hello, which proves the token (before the server starts).
  void set_connection_limit(std::shared_ptr<ConnectionLimit> limit) { connection_limit_ = std::move(limit); }

  grpc::ServerUnaryReactor* Hello(grpc::CallbackServerContext*, const v1::HelloRequest*, v1::HelloResponse*) override;
  grpc::ServerUnaryReactor* Join(grpc::CallbackServerContext*, const v1::JoinRequest*, v1::JoinResponse*) override;
  grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionEvent>* Session(grpc::CallbackServerContext*) override;
  grpc::ServerUnaryReactor* Leave(grpc::CallbackServerContext*, const v1::LeaveRequest*, v1::LeaveResponse*) override;
  grpc::ServerUnaryReactor* Set(grpc::CallbackServerContext*, const v1::SetRequest*, v1::SetResponse*) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext*, const v1::GetRequest*, v1::GetResponse*) override;
  grpc::ServerUnaryReactor* Add(grpc::CallbackServerContext*, const v1::AddRequest*, v1::AddResponse*) override;
  grpc::ServerUnaryReactor* CompareSet(grpc::CallbackServerContext*, const v1::CompareSetRequest*,
                                       v1::CompareSetResponse*) override;
  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext*, const v1::CheckRequest*, v1::CheckResponse*) override;
  grpc::ServerUnaryReactor* Wait(grpc::CallbackServerContext*, const v1::WaitRequest*, v1::WaitResponse*) override;
  grpc::ServerUnaryReactor* DeleteKey(grpc::CallbackServerContext*, const v1::DeleteKeyRequest*,
                                      v1::DeleteKeyResponse*) override;
  grpc::ServerUnaryReactor* NumKeys(grpc::CallbackServerContext*, const v1::NumKeysRequest*,
                                    v1::NumKeysResponse*) override;
  grpc::ServerUnaryReactor* ListKeys(grpc::CallbackServerContext*, const v1::ListKeysRequest*,
                                     v1::ListKeysResponse*) override;
  grpc::ServerUnaryReactor* Append(grpc::CallbackServerContext*, const v1::AppendRequest*, v1::AppendResponse*) override;
  grpc::ServerUnaryReactor* MultiGet(grpc::CallbackServerContext*, const v1::MultiGetRequest*,
                                     v1::MultiGetResponse*) override;
  grpc::ServerUnaryReactor* MultiSet(grpc::CallbackServerContext*, const v1::MultiSetRequest*,
                                     v1::MultiSetResponse*) override;
  grpc::ServerUnaryReactor* Barrier(grpc::CallbackServerContext*, const v1::BarrierRequest*,
                                    v1::BarrierResponse*) override;
  grpc::ServerUnaryReactor* QueuePush(grpc::CallbackServerContext*, const v1::QueuePushRequest*,
                                      v1::QueuePushResponse*) override;
  grpc::ServerUnaryReactor* QueuePop(grpc::CallbackServerContext*, const v1::QueuePopRequest*,
                                     v1::QueuePopResponse*) override;
  grpc::ServerUnaryReactor* QueueLen(grpc::CallbackServerContext*, const v1::QueueLenRequest*,
                                     v1::QueueLenResponse*) override;
  grpc::ServerUnaryReactor* Status(grpc::CallbackServerContext*, const v1::StatusRequest*,
                                   v1::StatusResponse*) override;

 private:
  // Runs a quick call under the core lock and finishes it with the status it returns.
  template <class Fn>
  grpc::ServerUnaryReactor* quick(RpcMetrics::Call call, grpc::CallbackServerContext* context, Fn fn);
  // Finishes a unary call with `status` and counts it.
  grpc::ServerUnaryReactor* answer(const RpcMetrics::Call& call, grpc::CallbackServerContext* context,
                                   const grpc::Status& status);

  CoreHost& host_;
  std::string version_;
  std::vector<std::string> features_;
  std::atomic<int> listen_port_{0};
  std::shared_ptr<ConnectionLimit> connection_limit_;
};

}  // namespace llmrdzv::server
