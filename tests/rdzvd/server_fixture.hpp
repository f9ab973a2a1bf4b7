// An rdzvd service running in-process on 127.0.0.1 (ephemeral port) with its Asio loop on a
// thread, and a stub to call it: real gRPC, real core, no child process. It counts the calls it
// receives by method, so tests can tell which path a client took.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <thread>

#include "core_host.hpp"
#include "llmrdzv/client/handshake.hpp"
#include "llmrdzv/v1/rendezvous.grpc.pb.h"
#include "rendezvous_service.hpp"
#include "tuning.hpp"

namespace llmrdzv::server::testing {

inline core::CoreConfig server_test_config() {
  core::CoreConfig config;
  config.auth = {core::Mode::step, "7.0", "server-test-token", "", ""};  // a random daemon nonce
  config.settings.heartbeat_interval = core::Millis(100);
  // Far above any test's run time: raw-stub tests send no heartbeats, and a loaded machine must
  // not turn a slow test into a failed member. Tests of the timeout set their own.
  config.settings.heartbeat_timeout = core::Millis(30000);
  return config;
}

// Counts the calls a server receives, by method name ("Join", "Wait", ...), and can hold each
// call for a while before the service sees it (a daemon too busy to answer promptly).
class MethodCounter {
 public:
  std::atomic<int> delay_ms{0};

  void add(const std::string& method) {
    std::lock_guard lock(mutex_);
    ++counts_[method.substr(method.rfind('/') + 1)];
  }
  int count(const std::string& name) const {
    std::lock_guard lock(mutex_);
    const auto it = counts_.find(name);
    return it == counts_.end() ? 0 : it->second;
  }

  class Factory final : public grpc::experimental::ServerInterceptorFactoryInterface {
   public:
    explicit Factory(MethodCounter& counter) : counter_(counter) {}
    grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
      counter_.add(info->method());
      return new PassThrough(counter_);
    }

   private:
    struct PassThrough final : grpc::experimental::Interceptor {
      explicit PassThrough(MethodCounter& counter) : counter_(counter) {}
      void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
        if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::POST_RECV_MESSAGE))
          std::this_thread::sleep_for(std::chrono::milliseconds(counter_.delay_ms.load()));
        methods->Proceed();
      }
      MethodCounter& counter_;
    };
    MethodCounter& counter_;
  };

 private:
  mutable std::mutex mutex_;
  std::map<std::string, int> counts_;
};

// What the daemon logs, kept so a test can wait for a line.
class LogLines {
 public:
  void add(const std::string& line) {
    std::lock_guard lock(mutex_);
    lines_.push_back(line);
    added_.notify_all();
  }
  // Whether a line containing `text` was logged within `timeout`.
  bool wait_for(const std::string& text, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return added_.wait_for(lock, timeout, [&] {
      for (const auto& line : lines_)
        if (line.find(text) != std::string::npos) return true;
      return false;
    });
  }

 private:
  std::mutex mutex_;
  std::condition_variable added_;
  std::vector<std::string> lines_;
};

class InProcessServer {
 public:
  // `features`: what Status advertises (fewer to see a client fall back to the plain calls).
  explicit InProcessServer(core::CoreConfig config = server_test_config(),
                           std::vector<std::string> features = RendezvousService::all_features())
      : config_(config),
        work_(io_.get_executor()),
        host_(config, [this](core::LogLevel, const std::string& line) { log_.add(line); }, io_),
        service_(host_, "test", std::move(features)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
    interceptors.push_back(std::make_unique<MethodCounter::Factory>(calls_));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
    tune_server(builder);
    server_ = builder.BuildAndStart();
    service_.set_listen_port(port_);
    io_thread_ = std::thread([this] { io_.run(); });
    channel_ = grpc::CreateChannel(endpoint(), grpc::InsecureChannelCredentials());
    stub_ = llmrdzv::v1::Rendezvous::NewStub(channel_);
    // The ticket every request's scope carries, from a real handshake with this server.
    const auto hello = client::hello(*stub_, config_.auth.step_rdzv_id, config_.auth.step_token, std::uint16_t(port_),
                                     std::chrono::seconds(30));
    if (hello.outcome != client::HelloOutcome::proven) throw std::runtime_error("test server handshake: " + hello.reason);
    ticket_ = hello.ticket;
  }
  ~InProcessServer() {
    host_.run([](core::Core& core) { core.shutdown("test over"); });
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    work_.reset();
    io_.stop();
    io_thread_.join();
  }

  llmrdzv::v1::Rendezvous::Stub& stub() { return *stub_; }
  // How many calls of `method` ("Join", "Wait", ...) the server has received.
  int calls_of(const std::string& method) const { return calls_.count(method); }
  // Every call's request waits this long before the service handles it.
  void delay_calls(std::chrono::milliseconds delay) { calls_.delay_ms = int(delay.count()); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  const core::CoreConfig& config() const { return config_; }
  CoreHost& host() { return host_; }
  LogLines& log() { return log_; }
  void scope(llmrdzv::v1::Scope* scope) const {
    scope->set_rdzv_id(config_.auth.step_rdzv_id);
    scope->set_ticket(ticket_);
  }
  // A Join of a fixed-size round of n for participant `id` on host "localhost".
  llmrdzv::v1::JoinRequest join_request(const std::string& id, int n) const {
    llmrdzv::v1::JoinRequest request;
    scope(request.mutable_scope());
    request.set_participant_id(id);
    request.set_host("localhost");
    request.set_requested_rank(-1);
    request.set_local_rank(-1);
    request.set_min_participants(n);
    request.set_max_participants(n);
    return request;
  }
  // A stub on a connection of its own, made with `args`.
  std::unique_ptr<llmrdzv::v1::Rendezvous::Stub> new_stub(grpc::ChannelArguments args = {}) {
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return llmrdzv::v1::Rendezvous::NewStub(grpc::CreateCustomChannel(
        endpoint(), grpc::InsecureChannelCredentials(), args));
  }

 private:
  core::CoreConfig config_;
  MethodCounter calls_;
  LogLines log_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  CoreHost host_;
  RendezvousService service_;
  int port_ = 0;
  std::string ticket_;
  std::unique_ptr<grpc::Server> server_;
  std::thread io_thread_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<llmrdzv::v1::Rendezvous::Stub> stub_;
};

}  // namespace llmrdzv::server::testing
