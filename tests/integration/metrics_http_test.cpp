// rdzvd's /metrics over real TCP against a real rdzvd process: the page and its Content-Type after
// a real round, HEAD, the error answers (404, 405, 400, an oversized request head), and that a
// client sending nothing holds neither a second scrape nor, after the I/O timeout, its connection.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <regex>
#include <string>

#include "test_clients.hpp"

using namespace llmrdzv::testing;
using namespace std::chrono_literals;

namespace {

// A TCP connection to 127.0.0.1:port with a receive timeout, closed when destroyed.
class Connection {
 public:
  explicit Connection(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const timeval timeout{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
      throw std::runtime_error("cannot connect to the metrics port " + std::to_string(port));
  }
  ~Connection() { ::close(fd_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void send(const std::string& bytes) const { (void)::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL); }
  // Everything until the server closes (or the 10 s receive timeout).
  std::string receive_all() const {
    std::string text;
    char buffer[65536];
    ssize_t got = 0;
    while ((got = ::recv(fd_, buffer, sizeof buffer, 0)) > 0) text.append(buffer, std::size_t(got));
    return text;
  }

 private:
  int fd_;
};

std::string exchange(std::uint16_t port, const std::string& request) {
  Connection connection(port);
  connection.send(request);
  return connection.receive_all();
}

std::string status_line(const std::string& response) { return response.substr(0, response.find("\r\n")); }

std::string body(const std::string& response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : response.substr(end + 4);
}

// rdzvd with /metrics on an ephemeral loopback port, read back from its log.
struct MetricsDaemon {
  explicit MetricsDaemon(const ScratchDir& dir, std::vector<std::string> extra = {})
      : rdzvd(dir, [&] {
          RdzvdConfig config;
          config.extra_args = {"--metrics-listen", "127.0.0.1:0"};
          config.extra_args.insert(config.extra_args.end(), extra.begin(), extra.end());
          return config;
        }()) {
    std::smatch match;
    const std::string log = rdzvd.log();
    if (!std::regex_search(log, match, std::regex("metrics on http://127\\.0\\.0\\.1:([0-9]+)/metrics")))
      throw std::runtime_error("rdzvd logged no metrics address:\n" + log);
    port = std::uint16_t(std::stoi(match[1]));
  }
  RdzvdProcess rdzvd;
  std::uint16_t port = 0;
};

const std::string kGet = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";

}  // namespace

TEST_CASE("metrics: a scrape after a real round shows it, in the text format's Content-Type") {
  ScratchDir dir;
  MetricsDaemon daemon(dir);
  auto processes = launch_test_clients(dir, daemon.rdzvd, 2, ClientLaunch{.processes = 2});
  collect_lines(processes, "barrier ", 1, 60s);
  for (auto& process : processes) CHECK(process->wait(30s) == 0);

  const std::string response = exchange(daemon.port, kGet);
  CHECK(status_line(response) == "HTTP/1.1 200 OK");
  CHECK_THAT(response, Catch::Contains("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
  CHECK_THAT(response, Catch::Contains("\r\nConnection: close\r\n"));
  const std::string page = body(response);
  CHECK_THAT(response, Catch::Contains("\r\nContent-Length: " + std::to_string(page.size()) + "\r\n"));
  CHECK_THAT(page, Catch::Contains("\nrdzvd_joins_total 2\n"));
  CHECK_THAT(page, Catch::Contains("\nrdzvd_rounds_completed_total 1\n"));
  CHECK_THAT(page, Catch::Contains("\nrdzvd_rpcs_total{method=\"Hello\",code=\"OK\"} "));
  CHECK_THAT(page, Catch::Contains("\nprocess_resident_memory_bytes "));
  CHECK(page.find(daemon.rdzvd.rdzv_id()) == std::string::npos);  // no ids unless asked for

  const std::string head = exchange(daemon.port, "HEAD /metrics?x=1 HTTP/1.0\r\n\r\n");
  CHECK(status_line(head) == "HTTP/1.1 200 OK");
  CHECK(body(head).empty());
}

TEST_CASE("metrics: metrics_expose_ids labels the step's rendezvous with its id") {
  ScratchDir dir;
  MetricsDaemon daemon(dir, {"--metrics-expose-ids"});
  // The member holds its place while the page is read: a client that left at once could end the
  // rendezvous before the scrape (seen once in CI).
  auto processes =
      launch_test_clients(dir, daemon.rdzvd, 1, ClientLaunch{.processes = 1, .args = {"--hold-ms", "60000"}});
  collect_lines(processes, "rank=", 1, 60s);
  const std::string page = body(exchange(daemon.port, kGet));
  CHECK_THAT(page, Catch::Contains("rdzvd_rendezvous_round{rdzv_id=\"" + daemon.rdzvd.rdzv_id() + "\"} 1\n"));
}

TEST_CASE("metrics: other paths, methods and malformed or oversized requests get error answers") {
  ScratchDir dir;
  MetricsDaemon daemon(dir);
  CHECK(status_line(exchange(daemon.port, "GET / HTTP/1.1\r\n\r\n")) == "HTTP/1.1 404 Not Found");
  CHECK(status_line(exchange(daemon.port, "GET /metrics/x HTTP/1.1\r\n\r\n")) == "HTTP/1.1 404 Not Found");
  const std::string post = exchange(daemon.port, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  CHECK(status_line(post) == "HTTP/1.1 405 Method Not Allowed");
  CHECK_THAT(post, Catch::Contains("\r\nAllow: GET, HEAD\r\n"));
  CHECK(status_line(exchange(daemon.port, "garbage\r\n\r\n")) == "HTTP/1.1 400 Bad Request");
  CHECK(status_line(exchange(daemon.port, "GET /metrics HTTP/2.0\r\n\r\n")) == "HTTP/1.1 400 Bad Request");
  const std::string huge = "GET /metrics HTTP/1.1\r\nX-Filler: " + std::string(20000, 'a') + "\r\n\r\n";
  CHECK(status_line(exchange(daemon.port, huge)) == "HTTP/1.1 431 Request Header Fields Too Large");
  // None of it hurt the daemon: it still answers.
  CHECK(status_line(exchange(daemon.port, kGet)) == "HTTP/1.1 200 OK");
}

TEST_CASE("metrics: a client that sends nothing holds neither another scrape nor its connection") {
  ScratchDir dir;
  MetricsDaemon daemon(dir);
  Connection silent(daemon.port);
  silent.send("GET /met");  // and then nothing
  const auto start = std::chrono::steady_clock::now();
  CHECK(status_line(exchange(daemon.port, kGet)) == "HTTP/1.1 200 OK");
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  // The daemon closes the silent connection after its I/O timeout (5 s), unanswered.
  CHECK(silent.receive_all().empty());
  CHECK(std::chrono::steady_clock::now() - start < 8s);
}
