// Implementation of the rdzvd discovery described in connector.hpp and options.hpp.
#include "connector.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "llmrdzv/client/error.hpp"
#include "llmrdzv/client/handshake.hpp"
#include "rpc.hpp"

namespace llmrdzv::client::detail {
namespace {

enum class Verdict { ours, foreign, unproven, silent };

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

// With a rendezvous id: the handshake, in which only the daemon holding our token passes and
// nothing secret is sent. Without one (rdzvctl list): an unscoped Status, which any rdzvd
// answers and which carries no secret either way.
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
  std::optional<ProbeResult> final_answer;  // foreign or unproven
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
  return RdzvError(unproven == candidates.end() ? ErrorCode::not_found : unproven->final_answer->code,
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
      const grpc_connectivity_state state = connection.channel->GetState(false);
      if (result.timed_out && state == GRPC_CHANNEL_READY) {
        candidate.deadline = std::min(candidate.deadline * 2, options.probe_deadline * 16);
      } else if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) {
        connection.channel.reset();
        connection.stub.reset();
      }
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
