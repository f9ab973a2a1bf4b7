// The rdzvd process: server bring-up, port publication, /metrics, signals, idle exit, systemd
// notifications (see daemon.hpp).
#include "daemon.hpp"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <pwd.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <utility>

#include "call_gate.hpp"
#include "connection_limit.hpp"
#include "core_host.hpp"
#include "ipv4_listener.hpp"
#include "logger.hpp"
#include "metrics_http.hpp"
#include "metrics_page.hpp"
#include "rendezvous_service.hpp"
#include "llmrdzv/common/text_values.hpp"
#include "llmrdzv/common/token.hpp"
#include "systemd_notify.hpp"
#include "tcp_socket_lookup.hpp"
#include "tuning.hpp"

namespace llmrdzv::server {
namespace {

HostPort parse_listen(const std::string& listen) {
  const auto address = parse_host_port(listen, 0);
  if (!address) throw OptionsError("--listen: '" + listen + "' is not HOST:PORT with PORT in 0..65535");
  return *address;
}

struct BoundServer {
  std::unique_ptr<RendezvousService> service;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<Ipv4Listener> ipv4;  // for IPv4 addresses; last, so that it stops accepting first
  std::string address;
  int port = 0;
};

bool is_ipv4_address(const std::string& host) {
  in_addr parsed{};
  return inet_pton(AF_INET, host.c_str(), &parsed) == 1;
}

// Ours for an IPv4 address (ipv4_listener.hpp: where max_unauthenticated_per_peer applies), else
// gRPC's own (host names, IPv6). False when `port` is taken.
bool add_listener(grpc::ServerBuilder& builder, BoundServer& bound, const std::string& host, std::uint16_t port,
                  CallGate& gate, std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor>& acceptor) {
  if (!is_ipv4_address(host)) {
    builder.AddListeningPort(bound.address, gate.credentials(), &bound.port);
    return true;
  }
  bound.ipv4 = Ipv4Listener::bind(host, port);
  if (!bound.ipv4) return false;
  bound.port = bound.ipv4->port();
  acceptor = builder.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, gate.credentials());
  return true;
}

// Logged once a minute per peer while its connections are being shut down.
void log_eviction(Logger& log, const ConnectionLimit::Verdict& verdict, std::uint32_t per_peer) {
  std::string who = verdict.peer;
  if (who.rfind("uid ", 0) == 0) {
    if (const passwd* user = getpwuid(uid_t(std::stoul(who.substr(4))))) who += std::string(" (") + user->pw_name + ")";
    who += " on this node";
  }
  log.warn("shutting down the oldest connections of " + who + ": it holds " + std::to_string(per_peer) +
           " that have not said Hello with the token (max_unauthenticated_per_peer)");
}

BoundServer bind_first_free(const DaemonOptions& options, CoreHost& host, CallGate& gate,
                            const std::shared_ptr<ConnectionLimit>& limit, Logger& log) {
  const HostPort listen = parse_listen(options.listen);
  std::vector<std::uint16_t> candidates;
  if (options.port_range && listen.port != 0) {
    for (std::uint32_t attempt = 0; attempt < options.port_probes; ++attempt)
      candidates.push_back(probe_port(*options.port_range, listen.port, attempt));
  } else {
    candidates.push_back(listen.port);
  }
  for (const std::uint16_t port : candidates) {
    BoundServer bound;
    bound.service = std::make_unique<RendezvousService>(host, LLMRDZV_VERSION);
    bound.address = listen.host + ":" + std::to_string(port);
    grpc::ServerBuilder builder;
    std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor;
    if (!add_listener(builder, bound, listen.host, port, gate, acceptor)) {
      log.info("cannot listen on " + bound.address + " (in use or not a local address), trying the next candidate");
      continue;
    }
    builder.RegisterService(bound.service.get());
    // Without this a second daemon could share a busy port and port probing would never move on.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.SetMaxReceiveMessageSize(int(options.max_message_bytes));
    if (bound.ipv4 && options.max_unauthenticated_per_peer != 0) bound.service->set_connection_limit(limit);
    tune_server(builder);
    bound.server = builder.BuildAndStart();
    if (bound.server && bound.port > 0) {
      if (bound.ipv4) {
        bound.ipv4->start(std::move(acceptor), limit, [&log, per_peer = options.max_unauthenticated_per_peer](
                                                          const ConnectionLimit::Verdict& v) { log_eviction(log, v, per_peer); });
      }
      bound.service->set_listen_port(bound.port);
      gate.set_listen_port(bound.port);
      return bound;
    }
    log.info("cannot listen on " + bound.address + " (in use or not a local address), trying the next candidate");
  }
  std::string tried;
  for (const auto port : candidates) {
    // Appended piecewise: "," + std::to_string(...) trips GCC 12's bogus -Wrestrict at -O3.
    if (!tried.empty()) tried += ',';
    tried += std::to_string(port);
  }
  throw OptionsError("--listen: could not bind " + listen.host + " on any of the ports " + tried);
}

class Daemon {
 public:
  Daemon(DaemonOptions options, std::vector<std::string> args)
      : options_(std::move(options)),
        args_(std::move(args)),
        systemd_(SystemdNotifier::from_environment()),
        log_(options_.log_level, options_.syslog),
        auth_(auth_with_nonce(load_auth(options_))),
        gate_(std::make_shared<CallGate>(std::make_shared<core::Authenticator>(auth_), LLMRDZV_VERSION)),
        host_({auth_, options_.core, options_.participants}, [this](core::LogLevel l, const std::string& m) { log_.write(l, m); },
              io_),
        signals_(io_, SIGTERM, SIGINT, SIGHUP),
        drain_signal_(io_, SIGUSR1),
        idle_timer_(io_),
        drain_timer_(io_),
        watchdog_timer_(io_),
        start_time_(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()) {}

  int run() {
    gate_->set_max_id_length(options_.core.limits.max_id_length);
    serve_metrics();  // first: a busy metrics port must not leave a half-started daemon
    BoundServer bound = bind_first_free(options_, host_, *gate_, connection_limit(), log_);
    server_ = bound.server.get();
    // stdout first: whoever sees the port file can rely on stdout holding the port too.
    std::printf("%d\n", bound.port);
    std::fflush(stdout);
    if (!options_.port_file.empty()) write_port_file(options_.port_file, bound.port);
    if (options_.port_fd >= 0) write_port_fd(options_.port_fd, bound.port);
    const std::string listening = "listening on " + bound.address.substr(0, bound.address.rfind(':')) + ":" +
                                  std::to_string(bound.port) + " mode=" + core::mode_name(options_.mode) +
                                  (options_.mode == core::Mode::step ? " rdzv=" + options_.rdzv_id : std::string());
    log_.info(listening);
    tell_systemd("READY=1\nSTATUS=" + listening);
    pet_watchdog();
    wait_for_signal();
    wait_for_drain();
    watch_idle();
    io_.run();
    bound.server->Wait();
    log_.info("stopped");
    return 0;
  }

 private:
  void serve_metrics() {
    if (options_.metrics_listen.empty()) return;
    const HostPort listen = *parse_host_port(options_.metrics_listen, 0);  // validated with the options
    try {
      metrics_ = std::make_unique<MetricsHttpServer>(io_, listen, [this] { return metrics_page(); });
    } catch (const std::runtime_error& e) {
      throw OptionsError(std::string("--metrics-listen: ") + e.what());
    }
    log_.info("metrics on http://" + listen.host + ":" + std::to_string(metrics_->port()) + "/metrics");
  }

  // max_unauthenticated_per_peer, telling this node's users apart by the kernel's sock_diag (where
  // the kernel offers none, every peer is its address).
  std::shared_ptr<ConnectionLimit> connection_limit() {
    if (options_.max_unauthenticated_per_peer != 0 && !sockets_.available()) {
      log_.warn("max_unauthenticated_per_peer: this kernel answers no sock_diag lookups (errno " +
                std::to_string(sockets_.open_error()) + "), so this node's users are told apart by address only");
    }
    connection_limit_ = std::make_shared<ConnectionLimit>(
        options_.max_unauthenticated_per_peer, std::vector<std::uint32_t>{0, std::uint32_t(geteuid())},
        [this](const sockaddr_in& local, const sockaddr_in& remote) { return sockets_.owner(local, remote); });
    return connection_limit_;
  }

  std::string metrics_page() {
    const PageInfo info{LLMRDZV_VERSION,         core::mode_name(options_.mode), options_.metrics_expose_ids,
                        start_time_,             resident_memory_bytes(),        gate_->refused(),
                        connection_limit_ ? connection_limit_->evicted() : 0};
    const core::CoreMetrics core = host_.run([](core::Core& core) { return core.metrics(); });
    return render_metrics_page(core, host_.rpcs().snapshot(), info);
  }

  void wait_for_signal() {
    signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
      if (ec) return;
      if (signal == SIGHUP) {
        reload();
        wait_for_signal();
        return;
      }
      stop(signal == SIGTERM ? "SIGTERM" : "SIGINT");
    });
  }

  void reload() {
    if (options_.config_file.empty()) {
      log_.warn("SIGHUP: no --config file to reload");
      return;
    }
    tell_systemd("RELOADING=1");
    struct Ready {  // READY=1 again however the reload ends
      Daemon& daemon;
      ~Ready() { daemon.tell_systemd("READY=1"); }
    } ready{*this};
    try {
      const DaemonOptions reloaded = parse_options(args_);
      const auto changes = apply_reload(options_, reloaded);
      host_.run([this](core::Core& core) { core.reconfigure(options_.core); });
      gate_->set_max_id_length(options_.core.limits.max_id_length);
      log_.set_level(options_.log_level);
      if (changes.empty()) log_.info("SIGHUP: reloaded " + options_.config_file + ", nothing changed");
      for (const auto& change : changes) log_.info("SIGHUP: " + change);
    } catch (const std::exception& e) {  // OptionsError, or anything else: the daemon keeps serving
      log_.error(std::string("SIGHUP: reload failed, keeping the running config: ") + e.what());
    }
  }

  // SIGUSR1 (slurmstepd, when the step's first node is done): exit as soon as no member remains,
  // so ranks on other nodes can still leave (or be seen failing) before the daemon goes. Joiners
  // of a fixed-size round are failed at once: with this node's tasks gone that round can never
  // gather, and they would hold the daemon (and srun) for the whole join timeout.
  void wait_for_drain() {
    drain_signal_.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      log_.info("SIGUSR1: exiting once no member remains");
      host_.run([](core::Core& core) {
        core.close_fixed_gatherings(
            "the rendezvous is closing: the step's tasks on the daemon's node have exited, so this "
            "fixed-size round cannot gather its members");
      });
      watch_drain();
    });
  }

  void watch_drain() {
    if (!host_.run([](core::Core& core) { return core.has_live_members(); })) {
      stop("SIGUSR1 and no member remains");
      return;
    }
    drain_timer_.expires_after(std::chrono::milliseconds(50));
    drain_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) watch_drain();
    });
  }

  // Ticks every second even with no idle timeout, so a SIGHUP can turn it on or off (0 = never).
  // A Join waiting for late nodes, a blocked call or an open session touches nothing for a while
  // but is activity all the same: idleness counts from when the last of them ended (to the tick).
  void watch_idle() {
    idle_timer_.expires_after(std::chrono::seconds(1));
    idle_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      const auto now = std::chrono::steady_clock::now();
      const auto [in_use, last_activity] =
          host_.run([](core::Core& core) { return std::pair{core.in_use(), core.last_activity()}; });
      if (in_use) last_in_use_ = now;
      const auto idle = now - std::max(last_activity, last_in_use_);
      if (options_.idle_timeout_s != 0 && idle >= std::chrono::seconds(options_.idle_timeout_s)) {
        stop("no rendezvous activity for " + std::to_string(options_.idle_timeout_s) + " s");
        return;
      }
      watch_idle();
    });
  }

  // WATCHDOG=1 at the period systemd asked for, from the event loop and only once the core's
  // lock could be taken: a daemon whose loop or core hangs stops petting and is restarted.
  void pet_watchdog() {
    const auto period = systemd_.watchdog_period();
    if (!period) return;
    watchdog_timer_.expires_after(*period);
    watchdog_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      host_.run([](core::Core&) {});
      tell_systemd("WATCHDOG=1");
      pet_watchdog();
    });
  }

  void tell_systemd(const std::string& state) {
    if (!systemd_.notify(state)) log_.warn("cannot notify systemd (" + state.substr(0, state.find('\n')) + ")");
  }

  void stop(const std::string& reason) {
    log_.info("stopping: " + reason);
    tell_systemd("STOPPING=1\nSTATUS=stopping: " + reason);
    watchdog_timer_.cancel();
    signals_.cancel();
    drain_signal_.cancel();
    idle_timer_.cancel();
    drain_timer_.cancel();
    host_.run([&](core::Core& core) { core.shutdown(reason); });
    // Everything blocked has been completed; give the SHUTDOWN events a moment to be written.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    io_.stop();
  }

  // The core and the call gate check tickets against one daemon nonce.
  static core::AuthConfig auth_with_nonce(core::AuthConfig auth) {
    auth.daemon_nonce = random_bytes(kNonceBytes);
    return auth;
  }

  DaemonOptions options_;
  std::vector<std::string> args_;
  SystemdNotifier systemd_;
  Logger log_;
  core::AuthConfig auth_;
  std::shared_ptr<CallGate> gate_;
  boost::asio::io_context io_;
  CoreHost host_;
  boost::asio::signal_set signals_;
  boost::asio::signal_set drain_signal_;
  boost::asio::steady_timer idle_timer_;
  boost::asio::steady_timer drain_timer_;
  boost::asio::steady_timer watchdog_timer_;
  double start_time_;  // Unix time, for process_start_time_seconds
  std::chrono::steady_clock::time_point last_in_use_{};  // the idle watch's latest tick that found the core in use
  std::unique_ptr<MetricsHttpServer> metrics_;
  TcpSocketLookup sockets_;  // for the connection limit, asked from the accept thread only
  std::shared_ptr<ConnectionLimit> connection_limit_;
  grpc::Server* server_ = nullptr;
};

}  // namespace

void write_port_file(const std::string& path, int port) {
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  const std::string text = std::to_string(port) + "\n";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const bool written = fd >= 0 && ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  const int saved_errno = errno;
  if (fd >= 0) ::close(fd);
  if (!written || ::rename(temporary.c_str(), path.c_str()) != 0) {
    const int err = written ? errno : saved_errno;
    ::unlink(temporary.c_str());
    throw OptionsError("--port-file: cannot write '" + path + "': " + std::strerror(err));
  }
}

void write_port_fd(int fd, int port) {
  const std::string text = std::to_string(port) + "\n";
  ::signal(SIGPIPE, SIG_IGN);  // a launcher that stopped listening must not kill the daemon
  const bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  const int saved_errno = errno;
  ::close(fd);
  if (!written) throw OptionsError("--port-fd: cannot write to descriptor " + std::to_string(fd) + ": " + std::strerror(saved_errno));
}

void report_failure(const std::vector<std::string>& args, const std::string& why) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--port-fd") continue;
    const auto fd = parse_unsigned(args[i + 1], 0, 65535);
    if (!fd || ::fcntl(int(*fd), F_GETFD) == -1) return;  // closed once the port was written
    std::string line = "error: " + why;
    std::replace(line.begin(), line.end(), '\n', ' ');
    line += '\n';
    ::signal(SIGPIPE, SIG_IGN);
    (void)!::write(int(*fd), line.data(), line.size());
    ::close(int(*fd));
    return;
  }
}

int run_daemon(DaemonOptions options, const std::vector<std::string>& args) {
  Daemon daemon(std::move(options), args);
  return daemon.run();
}

}  // namespace llmrdzv::server
