// Attackers of the handshake (see impostors.hpp).
#include "impostors.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/generic/generic_stub.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <condition_variable>
#include <fstream>
#include <stdexcept>

#include "llmrdzv/common/token.hpp"

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
  Call(FakeDaemon& fake, grpc::GenericCallbackServerContext* context) : fake_(fake), method_(context->method()) {
    for (const auto& [key, value] : context->client_metadata()) {
      if (key.starts_with("llm-rdzv-")) metadata_.emplace_back(std::string(key.data(), key.size()), std::string(value.data(), value.size()));
    }
    StartRead(&request_);
  }

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
      for (const auto& [key, value] : metadata_) context.AddMetadata(key, value);  // the client's credential too
      const grpc::Status relayed = fake_.relay_->Hello(&context, hello, &response);
      if (!relayed.ok()) return Finish(relayed);
      answer = response.SerializeAsString();
    }
    grpc::Slice slice(answer);
    response_ = grpc::ByteBuffer(&slice, 1);
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  FakeDaemon& fake_;
  std::string method_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
};

grpc::ServerGenericBidiReactor* FakeDaemon::Service::CreateReactor(grpc::GenericCallbackServerContext* context) {
  return new Call(fake_, context);
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

std::vector<grpc::Status> forged_set_flood(const std::string& endpoint, const std::string& rdzv_id, int calls,
                                           std::size_t value_bytes, bool forged_metadata,
                                           std::chrono::milliseconds deadline) {
  const std::string forged = "t2." + std::string(64, 'a');
  llmrdzv::v1::SetRequest request;
  request.mutable_scope()->set_rdzv_id(rdzv_id);
  request.mutable_scope()->set_ticket(forged);
  request.set_key("flood");
  request.set_value(std::string(value_bytes, 'x'));
  grpc::Slice serialized(request.SerializeAsString());
  request.Clear();
  const grpc::ByteBuffer message(&serialized, 1);

  struct Pending {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<grpc::GenericStub> stub;
    grpc::ClientContext context;
    grpc::ByteBuffer request, response;
    grpc::Status status;
  };
  std::vector<std::unique_ptr<Pending>> pending;
  std::mutex mutex;
  std::condition_variable all_done;
  int finished = 0;
  for (int i = 0; i < calls; ++i) {
    auto call = std::make_unique<Pending>();
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection per call
    call->channel = grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
    call->stub = std::make_unique<grpc::GenericStub>(call->channel);
    call->context.set_deadline(std::chrono::system_clock::now() + deadline);
    if (forged_metadata) {
      call->context.AddMetadata(kRdzvIdMetadata, rdzv_id);
      call->context.AddMetadata(kCredentialMetadata, forged);
    }
    call->request = message;
    pending.push_back(std::move(call));
  }
  for (auto& call : pending) {
    Pending* p = call.get();
    p->stub->UnaryCall(&p->context, "/llmrdzv.v1.Rendezvous/Set", grpc::StubOptions(), &p->request, &p->response,
                       [p, &mutex, &all_done, &finished](grpc::Status status) {
                         std::lock_guard lock(mutex);
                         p->status = std::move(status);
                         ++finished;
                         all_done.notify_all();
                       });
  }
  std::unique_lock lock(mutex);
  all_done.wait(lock, [&] { return finished == calls; });  // every call ends by its deadline
  std::vector<grpc::Status> statuses;
  for (const auto& call : pending) statuses.push_back(call->status);
  return statuses;
}

IdleConnections::IdleConnections(const std::string& target, int count) {
  const auto colon = target.rfind(':');
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (colon == std::string::npos ||
      getaddrinfo(target.substr(0, colon).c_str(), target.substr(colon + 1).c_str(), &hints, &found) != 0)
    throw std::runtime_error("idle connections: '" + target + "' is not HOST:PORT of an IPv4 host");
  sockaddr_in where{};
  std::memcpy(&where, found->ai_addr, sizeof where);
  freeaddrinfo(found);
  for (int i = 0; i < count; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("idle connections: socket: " + std::string(std::strerror(errno)));
    if (connect(fd, reinterpret_cast<const sockaddr*>(&where), sizeof where) != 0) {
      const int error = errno;
      close(fd);
      throw std::runtime_error("idle connections: connection " + std::to_string(i + 1) + " to " + target + ": " +
                               std::strerror(error));
    }
    fds_.push_back(fd);
  }
  closed_.assign(fds_.size(), false);
}

IdleConnections::~IdleConnections() {
  for (int fd : fds_) close(fd);
}

int IdleConnections::closed_by_peer() {
  int closed = 0;
  char sink[4096];
  for (std::size_t i = 0; i < fds_.size(); ++i) {
    // The server may have sent its HTTP/2 settings before it closed: read past them to the end.
    while (!closed_[i]) {
      const ssize_t got = recv(fds_[i], sink, sizeof sink, MSG_DONTWAIT);
      if (got > 0) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      closed_[i] = true;  // the end of the stream, or a reset
    }
    closed += closed_[i] ? 1 : 0;
  }
  return closed;
}

int IdleConnections::oldest_closed_in_a_row() const {
  int count = 0;
  while (count < int(closed_.size()) && closed_[std::size_t(count)]) ++count;
  return count;
}

std::uint64_t resident_bytes(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "VmRSS:   1234 kB"
  }
  return 0;
}

}  // namespace llmrdzv::testing
