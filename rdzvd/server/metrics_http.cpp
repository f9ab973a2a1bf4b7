// The /metrics HTTP server (see metrics_http.hpp).
#include "metrics_http.hpp"

#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <algorithm>
#include <istream>
#include <stdexcept>

#include "llmrdzv/metrics/exposition.hpp"

namespace llmrdzv::server {

namespace asio = boost::asio;
using asio::ip::tcp;

struct MetricsHttpServer::Shared {
  Render render;
  HttpLimits limits;
  std::size_t open = 0;  // connections being served (io thread only)
};

namespace {

struct Answer {
  int status = 200;
  const char* reason = "OK";
  std::string body;
  bool head = false;  // HEAD: the headers only
};

// What the request line asks for.
Answer answer_request(const std::string& line, const MetricsHttpServer::Shared& shared);

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::shared_ptr<MetricsHttpServer::Shared> shared)
      : socket_(std::move(socket)),
        shared_(std::move(shared)),
        request_(shared_->limits.max_request_bytes),
        deadline_(socket_.get_executor()) {
    ++shared_->open;
  }
  ~Connection() { --shared_->open; }

  void start() {
    arm_deadline();
    asio::async_read_until(socket_, request_, "\r\n\r\n",
                           [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                             self->on_request(ec);
                           });
  }

 private:
  void arm_deadline() {
    deadline_.expires_after(shared_->limits.io_timeout);
    deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->close();  // too slow: whatever is pending ends with an error
    });
  }

  void on_request(const boost::system::error_code& ec) {
    if (ec == asio::error::not_found) {  // the head filled the buffer without ending
      respond({431, "Request Header Fields Too Large", "request head over " +
                                                          std::to_string(shared_->limits.max_request_bytes) +
                                                          " bytes\n"});
      return;
    }
    if (ec) {  // the client went away, or the deadline closed the socket
      close();
      return;
    }
    std::istream stream(&request_);
    std::string line;
    std::getline(stream, line);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    respond(answer_request(line, *shared_));
  }

  void respond(const Answer& answer) {
    response_ = "HTTP/1.1 " + std::to_string(answer.status) + " " + answer.reason + "\r\n";
    response_ += answer.status == 200 ? "Content-Type: " + std::string(metrics::kContentType) + "\r\n"
                                      : std::string("Content-Type: text/plain; charset=utf-8\r\n");
    if (answer.status == 405) response_ += "Allow: GET, HEAD\r\n";
    response_ += "Content-Length: " + std::to_string(answer.body.size()) + "\r\nConnection: close\r\n\r\n";
    if (!answer.head) response_ += answer.body;
    arm_deadline();
    asio::async_write(socket_, asio::buffer(response_),
                      [self = shared_from_this()](const boost::system::error_code&, std::size_t) { self->close(); });
  }

  void close() {
    boost::system::error_code ignored;
    deadline_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  tcp::socket socket_;
  std::shared_ptr<MetricsHttpServer::Shared> shared_;
  asio::streambuf request_;
  asio::steady_timer deadline_;
  std::string response_;
};

Answer answer_request(const std::string& line, const MetricsHttpServer::Shared& shared) {
  const auto first = line.find(' ');
  const auto second = first == std::string::npos ? first : line.find(' ', first + 1);
  const std::string version = second == std::string::npos ? std::string() : line.substr(second + 1);
  if (version != "HTTP/1.0" && version != "HTTP/1.1")
    return {400, "Bad Request", "expected a request line: METHOD PATH HTTP/1.x\n"};
  const std::string method = line.substr(0, first);
  std::string path = line.substr(first + 1, second - first - 1);
  path.resize(std::min(path.size(), path.find('?')));  // a query string changes nothing
  if (path != "/metrics") return {404, "Not Found", "only /metrics is served here\n"};
  if (method != "GET" && method != "HEAD") return {405, "Method Not Allowed", "/metrics takes GET or HEAD\n"};
  try {
    return {200, "OK", shared.render(), method == "HEAD"};
  } catch (const std::exception& e) {  // out of memory, say: the daemon goes on serving rendezvous
    return {500, "Internal Server Error", std::string("cannot render the metrics: ") + e.what() + "\n"};
  }
}

}  // namespace

MetricsHttpServer::MetricsHttpServer(asio::io_context& io, const HostPort& listen, Render render, HttpLimits limits)
    : acceptor_(io), retry_(io), shared_(std::make_shared<Shared>(Shared{std::move(render), limits})) {
  const std::string where = listen.host + ":" + std::to_string(listen.port);
  std::string host = listen.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  boost::system::error_code ec;
  tcp::resolver resolver(io);
  const auto found = resolver.resolve(host, std::to_string(listen.port),
                                      tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || found.empty()) throw std::runtime_error("cannot resolve '" + where + "': " + ec.message());
  const tcp::endpoint endpoint = found.begin()->endpoint();
  if (acceptor_.open(endpoint.protocol(), ec) || acceptor_.set_option(tcp::acceptor::reuse_address(true), ec) ||
      acceptor_.bind(endpoint, ec) || acceptor_.listen(asio::socket_base::max_listen_connections, ec))
    throw std::runtime_error("cannot listen on " + where + ": " + ec.message());
  port_ = acceptor_.local_endpoint().port();
  accept();
}

void MetricsHttpServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;  // the server is going away
    if (ec) {  // out of descriptors, say: try again a little later rather than spin
      retry_.expires_after(std::chrono::milliseconds(100));
      retry_.async_wait([this](const boost::system::error_code& waited) {
        if (!waited) accept();
      });
      return;
    }
    if (shared_->open < shared_->limits.max_connections)
      std::make_shared<Connection>(std::move(socket), shared_)->start();
    accept();  // a socket over the limit closes unanswered as it goes out of scope
  });
}

}  // namespace llmrdzv::server
