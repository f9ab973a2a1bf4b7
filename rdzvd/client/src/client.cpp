// Client: construction (discovery), join with its session, leave, and the daemon status.
#include "llmrdzv/client/client.hpp"

#include <unistd.h>

#include <climits>

#include "client_impl.hpp"

namespace llmrdzv::client {
namespace {

using detail::Idempotent;

std::string local_host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name) != 0) return "localhost";
  return name;
}

Assignment assignment_of(const llmrdzv::v1::JoinResponse& response) {
  Assignment result;
  result.round = response.round();
  result.rank = response.rank();
  result.world_size = response.world_size();
  result.local_rank = response.local_rank();
  result.local_world_size = response.local_world_size();
  result.node_rank = response.node_rank();
  result.num_nodes = response.num_nodes();
  result.master_host = response.master_host();
  result.heartbeat_interval = std::chrono::milliseconds(response.heartbeat_interval_ms());
  result.heartbeat_timeout = std::chrono::milliseconds(response.heartbeat_timeout_ms());
  return result;
}

RendezvousStatus rendezvous_status_of(const llmrdzv::v1::RendezvousStatus& wire) {
  RendezvousStatus result{wire.rdzv_id(), wire.round(),   wire.state(),    wire.min_participants(),
                          wire.max_participants(), wire.joined(), wire.members(), wire.waiting(),
                          wire.num_keys(),    wire.kv_bytes(), wire.age_ms(),  {}};
  for (const auto& member : wire.member_details()) {
    result.member_details.push_back(MemberStatus{member.participant_id(), member.rank(), member.host(),
                                                 member.local_rank(), member.last_heartbeat_age_ms(),
                                                 member.session_open()});
  }
  return result;
}

// Before the daemon has told us an interval, and if it says 0.
constexpr std::chrono::milliseconds kDefaultHeartbeatInterval{1000};

}  // namespace

Client::Client(Options options) : impl_(std::make_unique<Impl>()) {
  options.validate();
  if (options.host.empty()) options.host = local_host_name();
  if (options.participant_id.empty()) options.participant_id = options.host + ":" + std::to_string(getpid());
  impl_->options = std::move(options);
  impl_->scope.set_rdzv_id(impl_->options.rdzv_id);
  impl_->scope.set_token(impl_->options.token);
  impl_->connection = detail::connect(impl_->options);
}

Client::~Client() {
  std::unique_ptr<detail::Session> session;
  {
    std::lock_guard lock(impl_->mutex);
    session = std::move(impl_->session);
  }
  session.reset();
}

Assignment Client::join(SessionCallback on_event) {
  const Options& options = impl_->options;
  llmrdzv::v1::JoinRequest request;
  *request.mutable_scope() = impl_->scope;
  request.set_participant_id(options.participant_id);
  request.set_requested_rank(options.requested_rank);
  request.set_host(options.host);
  request.set_local_rank(options.local_rank);
  request.set_min_participants(options.min_world);
  request.set_max_participants(options.max_world);
  request.set_last_call_ms(detail::wire_timeout(options.last_call, "join last_call"));
  request.set_timeout_ms(detail::wire_timeout(options.join_timeout, "join"));
  llmrdzv::v1::JoinResponse response;
  impl_->call("join", Idempotent::yes, options.join_timeout, [&](grpc::ClientContext& context) {
    return impl_->connection.stub->Join(&context, request, &response);
  });
  const Assignment assignment = assignment_of(response);

  std::unique_ptr<detail::Session> previous;
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->session && impl_->session->round() == assignment.round) {
      impl_->assignment = assignment;  // a retried join of the round we already hold
      return assignment;
    }
    previous = std::move(impl_->session);
  }
  previous.reset();  // the old round's session; closing it after the new Join cannot fail the new round

  detail::SessionSpec spec{impl_->scope, options.participant_id, assignment.round,
                           assignment.heartbeat_interval.count() > 0 ? assignment.heartbeat_interval
                                                                     : kDefaultHeartbeatInterval,
                           options.call_deadline, impl_->connection.endpoint};
  auto session = std::make_unique<detail::Session>(*impl_->connection.stub, std::move(spec), std::move(on_event));
  std::lock_guard lock(impl_->mutex);
  impl_->session = std::move(session);
  impl_->assignment = assignment;
  return assignment;
}

void Client::leave() {
  std::unique_ptr<detail::Session> session;
  {
    std::lock_guard lock(impl_->mutex);
    session = std::move(impl_->session);
    if (!impl_->assignment) return;
    impl_->assignment.reset();
  }
  llmrdzv::v1::LeaveRequest request;
  *request.mutable_scope() = impl_->scope;
  request.set_participant_id(impl_->options.participant_id);
  llmrdzv::v1::LeaveResponse response;
  try {
    impl_->call("leave", Idempotent::yes, std::chrono::milliseconds(0), [&](grpc::ClientContext& context) {
      return impl_->connection.stub->Leave(&context, request, &response);
    });
  } catch (...) {
    session.reset();
    throw;
  }
  session.reset();  // after Leave, so the daemon counts this as leaving, not failing
}

DaemonStatus Client::status(bool with_scope) const {
  llmrdzv::v1::StatusRequest request;
  if (with_scope) *request.mutable_scope() = impl_->scope;
  llmrdzv::v1::StatusResponse response;
  impl_->call("status", Idempotent::yes, std::chrono::milliseconds(0), [&](grpc::ClientContext& context) {
    return impl_->connection.stub->Status(&context, request, &response);
  });
  DaemonStatus result{response.version(), response.uptime_ms(), response.mode(), {}};
  for (const auto& rendezvous : response.rendezvous()) result.rendezvous.push_back(rendezvous_status_of(rendezvous));
  return result;
}

const Options& Client::options() const { return impl_->options; }
const std::string& Client::endpoint() const { return impl_->connection.endpoint; }

std::optional<Assignment> Client::assignment() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->assignment;
}

}  // namespace llmrdzv::client
