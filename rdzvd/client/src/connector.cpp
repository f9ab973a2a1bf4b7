// Implementation of the rdzvd discovery described in connector.hpp and options.hpp.
#include "connector.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "llmrdzv/client/error.hpp"
#include "rpc.hpp"

namespace llmrdzv::client::detail {
namespace {

constexpr std::string_view kForeignPrefix = "foreign-rendezvous:";

enum class Verdict { ours, foreign, silent };

struct ProbeResult {
  Verdict verdict;
  std::string reason;      // why the candidate was skipped
  bool timed_out = false;  // silent because the probe deadline passed (not refused, not foreign)
};

std::vector<std::uint16_t> candidate_ports(const Options& options, std::uint16_t base) {
  if (!options.port_range) return {base};
  std::vector<std::uint16_t> ports;
  const auto count = std::min(options.port_probes, options.port_range->size());
  for (std::uint32_t k = 0; k < count; ++k) ports.push_back(probe_port(*options.port_range, base, k));
  return ports;
}

std::string join_host_port(const std::string& host, std::uint16_t port) { return host + ":" + std::to_string(port); }

// One cheap call that any rdzvd answers: NumKeys of the rendezvous-wide space (or an unscoped
// Status when there is no rendezvous id, as rdzvctl list does). Any answer in rdzvd's vocabulary
// other than "foreign-rendezvous:" means this is the daemon for us; transport failures and
// statuses an rdzvd never sends mean this is not an rdzvd (or not up yet).
ProbeResult probe(llmrdzv::v1::Rendezvous::Stub& stub, const Options& options, std::chrono::milliseconds deadline) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  grpc::Status status;
  if (options.rdzv_id.empty()) {
    llmrdzv::v1::StatusRequest request;
    llmrdzv::v1::StatusResponse response;
    status = stub.Status(&context, request, &response);
  } else {
    llmrdzv::v1::NumKeysRequest request;
    request.mutable_scope()->set_rdzv_id(options.rdzv_id);
    request.mutable_scope()->set_token(options.token);
    llmrdzv::v1::NumKeysResponse response;
    status = stub.NumKeys(&context, request, &response);
  }
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::ABORTED: return {Verdict::ours, {}};
    case grpc::StatusCode::NOT_FOUND:
      if (status.error_message().starts_with(kForeignPrefix)) return {Verdict::foreign, status.error_message()};
      return {Verdict::ours, {}};
    case grpc::StatusCode::UNAVAILABLE: return {Verdict::silent, "unavailable: " + status.error_message()};
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return {Verdict::silent, "no answer within " + std::to_string(deadline.count()) + " ms", true};
    default:
      return {Verdict::silent, "not an rdzvd (" + std::string(error_code_name(error_code_of(status.error_code()))) +
                                   ": " + status.error_message() + ")"};
  }
}

// One Status(daemon_only) call. A daemon that lists no features (older rdzvd) or does not answer
// gets the plain calls.
Features features_of(llmrdzv::v1::Rendezvous::Stub& stub, std::chrono::milliseconds deadline) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  llmrdzv::v1::StatusRequest request;
  request.set_daemon_only(true);
  llmrdzv::v1::StatusResponse response;
  Features features;
  if (!stub.Status(&context, request, &response).ok()) return features;
  for (const auto& feature : response.features()) {
    if (feature == "session-join") features.session_join = true;
    if (feature == "session-calls") features.session_calls = true;
  }
  return features;
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
  const auto give_up = std::chrono::steady_clock::now() + options.connect_timeout;
  // A channel per candidate, kept across rounds while its connection is up or being set up: a
  // daemon too busy to answer within the probe deadline (thousands of ranks starting at once)
  // keeps the connection it already accepted instead of being handed a new one every round. A
  // peer that accepted the connection but answered too late gets twice the deadline next round
  // (up to 16x probe_deadline). A refused or failed connection is made afresh next round.
  struct Candidate {
    Connection connection;
    std::chrono::milliseconds deadline;
  };
  std::vector<Candidate> candidates;
  for (const auto port : candidate_ports(options, base.port)) {
    Candidate& candidate = candidates.emplace_back();
    candidate.connection.endpoint = join_host_port(base.host, port);
    candidate.deadline = options.probe_deadline;
  }
  // A call's deadline: the candidate's, but never past connect_timeout (nor below probe_deadline).
  const auto within_budget = [&](std::chrono::milliseconds deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
    return std::min(deadline, std::max(left, options.probe_deadline));
  };
  std::string last_reasons;
  for (unsigned round = 0;; ++round) {
    last_reasons.clear();
    for (auto& [connection, deadline] : candidates) {
      if (!connection.channel) {
        connection.channel = make_channel(connection.endpoint);
        connection.stub = llmrdzv::v1::Rendezvous::NewStub(connection.channel);
      }
      const ProbeResult result = probe(*connection.stub, options, within_budget(deadline));
      if (result.verdict == Verdict::ours) {
        connection.features = features_of(*connection.stub, within_budget(deadline));
        return std::move(connection);
      }
      if (result.verdict == Verdict::foreign && candidates.size() == 1) {
        throw RdzvError(ErrorCode::not_found, "rdzvd " + connection.endpoint + " does not serve rendezvous '" +
                                                  options.rdzv_id + "': " + result.reason);
      }
      last_reasons += "\n  " + connection.endpoint + ": " + result.reason;
      const grpc_connectivity_state state = connection.channel->GetState(false);
      if (result.timed_out && state == GRPC_CHANNEL_READY) {
        deadline = std::min(deadline * 2, options.probe_deadline * 16);
      } else if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) {
        connection.channel.reset();
        connection.stub.reset();
      }
    }
    const auto delay = backoff_delay(options, round);
    if (std::chrono::steady_clock::now() + delay >= give_up) break;
    std::this_thread::sleep_for(delay);
  }
  throw RdzvError(ErrorCode::unavailable,
                  "no rdzvd serving rendezvous '" + options.rdzv_id + "' answered within " +
                      std::to_string(options.connect_timeout.count()) + " ms; last tries:" + last_reasons);
}

}  // namespace llmrdzv::client::detail
