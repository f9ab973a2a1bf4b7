// Implementation of the rdzvd discovery described in connector.hpp and options.hpp.
#include "connector.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "llmrdzv/client/error.hpp"
#include "llmrdzv/client/handshake.hpp"
#include "llmrdzv/common/token.hpp"
#include "rpc.hpp"

namespace llmrdzv::client::detail {
namespace {

enum class Verdict { ours, foreign, unproven, mute, silent };  // mute: a peer that never speaks HTTP/2

struct ProbeResult {
  Verdict verdict;
  std::string reason;      // why the candidate was skipped
  bool timed_out = false;  // silent because the probe deadline passed (not refused, not foreign)
  ErrorCode code = ErrorCode::unavailable;  // unproven: what to report if no candidate proves itself
  std::string ticket;      // ours, with a rendezvous id
  Features features;       // ours, with a rendezvous id
};

ProbeResult answer(Verdict verdict, std::string reason, bool timed_out = false) {
  ProbeResult result;
  result.verdict = verdict;
  result.reason = std::move(reason);
  result.timed_out = timed_out;
  return result;
}

std::vector<std::uint16_t> candidate_ports(const Options& options, std::uint16_t base) {
  if (!options.port_range) return {base};
  std::vector<std::uint16_t> ports;
  const auto count = std::min(options.port_probes, options.port_range->size());
  for (std::uint32_t k = 0; k < count; ++k) ports.push_back(probe_port(*options.port_range, base, k));
  return ports;
}

std::string join_host_port(const std::string& host, std::uint16_t port) { return host + ":" + std::to_string(port); }

// How long a peer that accepted a TCP connection gets to answer the HTTP/2 preface before it
// counts as mute. Any gRPC server sends its SETTINGS frame as soon as it accepts, however busy
// its handlers are; the margin covers a backlog of connections not yet accepted.
constexpr std::chrono::milliseconds kMuteAfter{2000};

// Which of `ports` on `host` hold a peer that accepts a TCP connection and then says nothing to
// the HTTP/2 client preface within `wait` (a squatter: rdzvd could not have bound that port).
// All are asked at once. Not mute: a peer that answers, refuses, closes, or cannot be reached.
std::vector<bool> mute_ports(const std::string& host, const std::vector<std::uint16_t>& ports,
                             std::chrono::milliseconds wait) {
  // The client connection preface and an empty SETTINGS frame (RFC 9113, 3.4 and 6.5).
  static constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
  std::vector<pollfd> sockets;
  for (const std::uint16_t port : ports) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    int fd = -1;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) == 0 && found != nullptr) {
      // Non-blocking: a host that drops the attempt costs `wait`, not TCP's minutes.
      fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) != 0 && errno != EINPROGRESS) {
        ::close(fd);
        fd = -1;
      }
      freeaddrinfo(found);
    }
    sockets.push_back({fd, POLLOUT, 0});
  }
  std::vector<bool> sent(ports.size(), false), answered(ports.size(), false);
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0 || ::poll(sockets.data(), sockets.size(), int(left.count())) <= 0) break;
    for (std::size_t i = 0; i < sockets.size(); ++i) {
      pollfd& s = sockets[i];
      if (s.fd < 0 || s.revents == 0) continue;
      int error = 0;
      socklen_t size = sizeof error;
      if (!sent[i] && (s.revents & POLLOUT) && ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &error, &size) == 0 &&
          error == 0 && ::send(s.fd, kPreface, sizeof kPreface - 1, MSG_NOSIGNAL) == ssize_t(sizeof kPreface - 1)) {
        sent[i] = true;
        s.events = POLLIN;
        continue;
      }
      answered[i] = sent[i];  // bytes, a close or an error after the preface; or a failed connect
      ::close(s.fd);
      s.fd = -1;
    }
  }
  std::vector<bool> mute(ports.size(), false);
  for (std::size_t i = 0; i < sockets.size(); ++i) {
    mute[i] = sent[i] && !answered[i];
    if (sockets[i].fd >= 0) ::close(sockets[i].fd);
  }
  return mute;
}

// With a rendezvous id: the handshake, in which only the daemon holding our token passes and
// nothing secret is sent. Without one (a tokenless rdzvctl ping): a Status without credential,
// which rdzvd refuses from its headers in words that say an rdzvd is there.
ProbeResult probe(llmrdzv::v1::Rendezvous::Stub& stub, const Options& options, std::uint16_t port,
                  std::chrono::milliseconds deadline) {
  if (options.rdzv_id.empty()) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    llmrdzv::v1::StatusRequest request;
    llmrdzv::v1::StatusResponse response;
    const grpc::Status status = stub.Status(&context, request, &response);
    switch (status.error_code()) {
      case grpc::StatusCode::OK: return answer(Verdict::ours, {});
      case grpc::StatusCode::PERMISSION_DENIED:
        // rdzvd refuses a tokenless call from its headers; that answer still says an rdzvd is there.
        if (status.error_message().starts_with(kGateRefusalPrefix)) return answer(Verdict::ours, {});
        return answer(Verdict::silent, "not an rdzvd (" + status.error_message() + ")");
      case grpc::StatusCode::UNAVAILABLE: return answer(Verdict::silent, "unavailable: " + status.error_message());
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        return answer(Verdict::silent, "no answer within " + std::to_string(deadline.count()) + " ms", true);
      default:
        return answer(Verdict::silent, "not an rdzvd (" + std::string(error_code_name(error_code_of(status.error_code()))) +
                                           ": " + status.error_message() + ")");
    }
  }
  const HelloResult hello_result = hello(stub, options.rdzv_id, options.token, port, deadline);
  ProbeResult result = answer(Verdict::silent, hello_result.reason, hello_result.timed_out);
  result.code = error_code_of(hello_result.code);
  switch (hello_result.outcome) {
    case HelloOutcome::proven:
      result.verdict = Verdict::ours;
      result.ticket = hello_result.ticket;
      for (const auto& feature : hello_result.features) {
        if (feature == "session-join") result.features.session_join = true;
        if (feature == "session-calls") result.features.session_calls = true;
      }
      break;
    case HelloOutcome::foreign: result.verdict = Verdict::foreign; break;
    case HelloOutcome::unproven: result.verdict = Verdict::unproven; break;
    case HelloOutcome::silent: result.verdict = Verdict::silent; break;
  }
  return result;
}

struct Candidate {
  Connection connection;
  std::uint16_t port = 0;
  std::chrono::milliseconds deadline;
  std::optional<ProbeResult> final_answer;  // foreign, unproven or mute
  bool mute_checked = false;                // mute_ports ran once already
  std::string reason;                       // the latest answer's
};

// How long other candidates still get to prove themselves once a peer failed the handshake.
constexpr std::chrono::milliseconds kUnprovenGrace{10000};

// The error once waiting cannot help: every candidate answered for good, or one failed the
// handshake and the grace period is over.
RdzvError settled(const Options& options, const std::vector<Candidate>& candidates, const std::string& reasons) {
  if (candidates.size() == 1 && candidates.front().final_answer) {
    const ProbeResult& answer = *candidates.front().final_answer;
    const std::string& endpoint = candidates.front().connection.endpoint;
    if (answer.verdict == Verdict::foreign)
      return RdzvError(ErrorCode::not_found,
                       "rdzvd " + endpoint + " does not serve rendezvous '" + options.rdzv_id + "': " + answer.reason);
    return RdzvError(answer.code, "rdzvd " + endpoint + " for rendezvous '" + options.rdzv_id + "' " + answer.reason);
  }
  const auto unproven = std::find_if(candidates.begin(), candidates.end(), [](const Candidate& c) {
    return c.final_answer && c.final_answer->verdict == Verdict::unproven;
  });
  const bool any_mute = std::any_of(candidates.begin(), candidates.end(), [](const Candidate& c) {
    return c.final_answer && c.final_answer->verdict == Verdict::mute;
  });
  const ErrorCode code = unproven != candidates.end() ? unproven->final_answer->code
                         : any_mute                   ? ErrorCode::unavailable
                                                      : ErrorCode::not_found;
  return RdzvError(code,
                   "no rdzvd serving rendezvous '" + options.rdzv_id + "' proved itself on any candidate port:" + reasons);
}

}  // namespace

std::shared_ptr<grpc::Channel> make_channel(const std::string& endpoint) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  // No BDP probing: it sends a PING after each quiet spell to size windows for bulk transfers;
  // rendezvous traffic is small messages, and at thousands of ranks the PINGs and their acks
  // were a third of rdzvd's writes (rdzvd turns it off on its side too, see server/tuning.cpp).
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // gRPC's default 4 MiB receive cap is below what rdzvd stores (16 MiB values, multi-get answers
  // of several): the daemon bounds every answer through its limits, so the client takes any size.
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
}

Connection connect(const Options& options) {
  const HostPort base = parse_endpoint(options.endpoint);
  const auto started = std::chrono::steady_clock::now();
  const auto give_up = started + options.connect_timeout;
  // A channel per candidate, kept across rounds while its connection is up or being set up: a
  // daemon too busy to answer within the probe deadline (thousands of ranks starting at once)
  // keeps the connection it already accepted instead of being handed a new one every round. A
  // peer that accepted the connection but answered too late gets twice the deadline next round
  // (up to 16x probe_deadline). A refused or failed connection is made afresh next round. A
  // foreign rdzvd or a peer that failed the handshake is not asked again; once every candidate
  // has answered so, waiting longer cannot help.
  std::vector<Candidate> candidates;
  for (const auto port : candidate_ports(options, base.port)) {
    Candidate& candidate = candidates.emplace_back();
    candidate.connection.endpoint = join_host_port(base.host, port);
    candidate.port = port;
    candidate.deadline = options.probe_deadline;
  }
  // A call's deadline: the candidate's, but never past connect_timeout (nor below probe_deadline).
  const auto within_budget = [&](std::chrono::milliseconds deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
    return std::min(deadline, std::max(left, options.probe_deadline));
  };
  const auto reasons = [&] {
    std::string text;
    for (const auto& candidate : candidates) text += "\n  " + candidate.connection.endpoint + ": " + candidate.reason;
    return text;
  };
  for (unsigned round = 0;; ++round) {
    bool any_silent = false;
    std::vector<Candidate*> to_check;  // silent this round, not yet checked for a mute peer
    for (auto& candidate : candidates) {
      if (candidate.final_answer) continue;
      Connection& connection = candidate.connection;
      if (!connection.channel) {
        connection.channel = make_channel(connection.endpoint);
        connection.stub = llmrdzv::v1::Rendezvous::NewStub(connection.channel);
      }
      ProbeResult result = probe(*connection.stub, options, candidate.port, within_budget(candidate.deadline));
      candidate.reason = result.reason;
      if (result.verdict == Verdict::ours) {
        connection.features = result.features;
        connection.ticket = std::move(result.ticket);
        return std::move(connection);
      }
      if (result.verdict != Verdict::silent) {
        candidate.final_answer = std::move(result);
        connection.channel.reset();
        connection.stub.reset();
        continue;
      }
      any_silent = true;
      if (!candidate.mute_checked) to_check.push_back(&candidate);
      const grpc_connectivity_state state = connection.channel->GetState(false);
      if (result.timed_out && state == GRPC_CHANNEL_READY) {
        candidate.deadline = std::min(candidate.deadline * 2, options.probe_deadline * 16);
      } else if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) {
        connection.channel.reset();
        connection.stub.reset();
      }
    }
    // Once per silent candidate (gRPC itself waits up to 20 s for a peer's SETTINGS): a port
    // whose peer never speaks HTTP/2 will not turn into our rdzvd while that peer holds it. A
    // sweep of such ports ends at once. A refused port costs one failed connect here.
    if (!to_check.empty()) {
      std::vector<std::uint16_t> ports;
      for (const Candidate* candidate : to_check) ports.push_back(candidate->port);
      const std::vector<bool> mute = mute_ports(base.host, ports, kMuteAfter);
      for (std::size_t i = 0; i < to_check.size(); ++i) {
        Candidate& candidate = *to_check[i];
        candidate.mute_checked = true;
        if (!mute[i]) continue;
        ProbeResult result = answer(Verdict::mute,
                                    "accepts TCP connections but never speaks HTTP/2 (no answer to its preface within " +
                                        std::to_string(kMuteAfter.count()) + " ms): another program holds this port, not rdzvd");
        result.code = ErrorCode::unavailable;
        candidate.reason = result.reason;
        candidate.final_answer = std::move(result);
        candidate.connection.channel.reset();
        candidate.connection.stub.reset();
      }
      any_silent = std::any_of(candidates.begin(), candidates.end(), [](const Candidate& c) { return !c.final_answer; });
    }
    const bool any_unproven = std::any_of(candidates.begin(), candidates.end(), [](const Candidate& c) {
      return c.final_answer && c.final_answer->verdict == Verdict::unproven;
    });
    if (!any_silent) throw settled(options, candidates, reasons());
    // A peer that failed the handshake is either the daemon with another token (the user's
    // mistake, worth reporting soon) or a squatter on the port while the real daemon comes up
    // on another candidate (moments after the tasks start): wait for the latter a grace period.
    if (any_unproven && std::chrono::steady_clock::now() - started >= std::min(kUnprovenGrace, options.connect_timeout))
      throw settled(options, candidates, reasons());
    const auto delay = backoff_delay(options, round);
    if (std::chrono::steady_clock::now() + delay >= give_up) break;
    std::this_thread::sleep_for(delay);
  }
  throw RdzvError(ErrorCode::unavailable, "no rdzvd serving rendezvous '" + options.rdzv_id + "' answered within " +
                                              std::to_string(options.connect_timeout.count()) + " ms; last tries:" +
                                              reasons());
}

}  // namespace llmrdzv::client::detail
