// The interceptor behind authenticated_calls_reporter (see authenticated_calls.hpp).
#include "authenticated_calls.hpp"

#include <grpcpp/server_context.h>

namespace llmrdzv::server {
namespace {

class Reporter final : public grpc::experimental::Interceptor {
 public:
  Reporter(grpc::experimental::ServerRpcInfo* info, ConnectionLimit& limit) : info_(info), limit_(limit) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    // By the time the call's headers reach the application, the gate has accepted them.
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::POST_RECV_INITIAL_METADATA))
      limit_.authenticated(info_->server_context()->peer());
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* info_;
  ConnectionLimit& limit_;
};

class ReporterFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit ReporterFactory(std::shared_ptr<ConnectionLimit> limit) : limit_(std::move(limit)) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new Reporter(info, *limit_);  // gRPC owns it
  }

 private:
  std::shared_ptr<ConnectionLimit> limit_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> authenticated_calls_reporter(
    std::shared_ptr<ConnectionLimit> limit) {
  return std::make_unique<ReporterFactory>(std::move(limit));
}

}  // namespace llmrdzv::server
