// Attackers of the handshake (see impostors.hpp).
#include "impostors.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

namespace llmrdzv::testing {
namespace {

constexpr std::string_view kHello = "/llmrdzv.v1.Rendezvous/Hello";

std::string to_string(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string text;
  if (!buffer.Dump(&slices).ok()) return text;
  for (const auto& slice : slices) text.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  return text;
}

}  // namespace

void Loot::add(const std::string& method, const std::string& bytes) {
  std::lock_guard lock(mutex_);
  if (!method.empty()) methods_.push_back(method);
  bytes_ += bytes;
}

std::string Loot::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

std::vector<std::string> Loot::methods() const {
  std::lock_guard lock(mutex_);
  return methods_;
}

RawSquatter::RawSquatter(std::uint16_t port, const std::string& address) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &where.sin_addr) != 1 ||
      bind(fd_, reinterpret_cast<sockaddr*>(&where), sizeof where) != 0 || listen(fd_, 64) != 0) {
    close(fd_);
    throw std::runtime_error("raw squatter: cannot listen on " + address + ":" + std::to_string(port));
  }
  thread_ = std::thread([this] { serve(); });
}

RawSquatter::~RawSquatter() {
  stop_ = true;
  thread_.join();
  for (int fd : clients_) close(fd);
  close(fd_);
}

void RawSquatter::serve() {
  while (!stop_) {
    std::vector<pollfd> fds{{fd_, POLLIN, 0}};
    for (int fd : clients_) fds.push_back({fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 50) <= 0) continue;
    if (fds[0].revents & POLLIN) {
      const int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) clients_.push_back(client);
    }
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buffer[4096];
      const ssize_t got = read(fds[i].fd, buffer, sizeof buffer);
      if (got > 0) loot_.add("", std::string(buffer, std::size_t(got)));
    }
  }
}

class FakeDaemon::Call final : public grpc::ServerGenericBidiReactor {
 public:
  Call(FakeDaemon& fake, std::string method) : fake_(fake), method_(std::move(method)) { StartRead(&request_); }

  void OnReadDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::OK);
    const std::string request = to_string(request_);
    fake_.loot_.add(method_, request);
    std::string answer;  // empty: OK with every field at its default
    if (method_ == kHello && fake_.relay_) {
      llmrdzv::v1::HelloRequest hello;
      hello.ParseFromString(request);
      llmrdzv::v1::HelloResponse response;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      if (fake_.relay_->Hello(&context, hello, &response).ok()) answer = response.SerializeAsString();
    }
    grpc::Slice slice(answer);
    response_ = grpc::ByteBuffer(&slice, 1);
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  FakeDaemon& fake_;
  std::string method_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
};

grpc::ServerGenericBidiReactor* FakeDaemon::Service::CreateReactor(grpc::GenericCallbackServerContext* context) {
  return new Call(fake_, context->method());
}

FakeDaemon::FakeDaemon(const std::string& listen, const std::string& relay_to) {
  if (!relay_to.empty())
    relay_ = llmrdzv::v1::Rendezvous::NewStub(grpc::CreateChannel(relay_to, grpc::InsecureChannelCredentials()));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port_);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterCallbackGenericService(&service_);
  server_ = builder.BuildAndStart();
  if (!server_ || port_ <= 0) throw std::runtime_error("fake daemon: cannot listen on " + listen);
}

FakeDaemon::~FakeDaemon() { server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1)); }

}  // namespace llmrdzv::testing
