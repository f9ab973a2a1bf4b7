// rdzvd's /metrics endpoint: a minimal plain-HTTP/1.x server on the daemon's Asio loop. One
// request per connection, answered and closed. So that a slow or hostile client cannot hold the
// daemon, the request head may be at most max_request_bytes and must arrive (and the answer be
// taken) within io_timeout, and at most max_connections are served at once (more are closed
// unanswered). GET or HEAD /metrics: 200 with the page; another path: 404; another method: 405;
// a malformed request line: 400; a head over the limit: 431.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "llmrdzv/common/text_values.hpp"

namespace llmrdzv::server {

struct HttpLimits {
  std::size_t max_request_bytes = 8192;
  std::chrono::milliseconds io_timeout{5000};
  std::size_t max_connections = 32;
};

class MetricsHttpServer {
 public:
  using Render = std::function<std::string()>;  // the page, called on the io thread per request

  // Binds and listens on `listen` (port 0: any). Throws std::runtime_error naming the address
  // and the reason when it cannot.
  MetricsHttpServer(boost::asio::io_context& io, const HostPort& listen, Render render, HttpLimits limits = {});

  std::uint16_t port() const { return port_; }

  // What the connections share with the server (defined with them); lives until the last closes.
  struct Shared;

 private:
  void accept();

  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_;
  std::shared_ptr<Shared> shared_;
  std::uint16_t port_ = 0;
};

}  // namespace llmrdzv::server
