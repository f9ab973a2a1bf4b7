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

llmrdzv::v1::JoinRequest join_request_of(const Client::Impl& impl) {
  const Options& options = impl.options;
  llmrdzv::v1::JoinRequest request;
  *request.mutable_scope() = impl.scope;
  request.set_participant_id(options.participant_id);
  request.set_requested_rank(options.requested_rank);
  request.set_host(options.host);
  request.set_local_rank(options.local_rank);
  request.set_min_participants(options.min_world);
  request.set_max_participants(options.max_world);
  request.set_last_call_ms(detail::wire_timeout(options.last_call, "join last_call"));
  request.set_timeout_ms(detail::wire_timeout(options.join_timeout, "join"));
  return request;
}

// Opens a session stream (retried on UNAVAILABLE when `idempotent`) and waits for OPENED.
std::shared_ptr<detail::Session> open_session(const Client::Impl& impl, const detail::SessionSpec& spec,
                                              const SessionCallback& on_event, std::string_view op,
                                              Idempotent idempotent) {
  std::shared_ptr<detail::Session> session;
  detail::retry(impl.options, impl.connection.endpoint, op, idempotent, [&] {
    auto candidate = std::make_shared<detail::Session>(*impl.connection.stub, spec, on_event);
    const grpc::Status status = candidate->opened();
    if (status.ok()) session = std::move(candidate);
    return status;
  });
  return session;
}

}  // namespace

Client::Client(Options options) : impl_(std::make_unique<Impl>()) {
  options.validate();
  if (options.host.empty()) options.host = local_host_name();
  if (options.participant_id.empty()) options.participant_id = options.host + ":" + std::to_string(getpid());
  impl_->options = std::move(options);
  impl_->scope.set_rdzv_id(impl_->options.rdzv_id);
  impl_->connection = detail::connect(impl_->options);
  impl_->scope.set_ticket(impl_->connection.ticket);
}

Client::~Client() {
  if (auto session = impl_->current_session()) session->close();
}

Assignment Client::join(SessionCallback on_event) {
  Impl& impl = *impl_;
  const Options& options = impl.options;
  const llmrdzv::v1::JoinRequest request = join_request_of(impl);
  const std::shared_ptr<detail::Session> previous = impl.current_session();
  detail::SessionSpec spec{impl.scope,         options.participant_id, 0, std::nullopt, kDefaultHeartbeatInterval,
                           options.call_deadline, impl.connection.endpoint};
  std::shared_ptr<detail::Session> session;
  Assignment assignment;
  if (impl.connection.features.session_join) {
    // One stream: the daemon joins, then opens the session for the round it completes.
    if (previous) previous->expect_replacement();  // what a retried join of its round does
    spec.join = request;
    spec.open_deadline = options.call_deadline + options.join_timeout;
    session = open_session(impl, spec, on_event, "join", Idempotent::yes);
    assignment = assignment_of(session->assignment());
    if (previous) previous->close();  // the old round's session, or the one just replaced
  } else {
    llmrdzv::v1::JoinResponse response;
    impl.call("join", Idempotent::yes, options.join_timeout, [&](grpc::ClientContext& context) {
      return impl.connection.stub->Join(&context, request, &response);
    });
    assignment = assignment_of(response);
    if (previous && previous->round() == assignment.round) {
      std::lock_guard lock(impl.mutex);
      impl.assignment = assignment;  // a retried join of the round we already hold
      return assignment;
    }
    // The old round's session; closing it after the new Join cannot fail the new round.
    if (previous) previous->close();
    spec.round = assignment.round;
    if (assignment.heartbeat_interval.count() > 0) spec.heartbeat_interval = assignment.heartbeat_interval;
    session = open_session(impl, spec, on_event, "session", Idempotent::no);
  }
  std::lock_guard lock(impl.mutex);
  impl.session = std::move(session);
  impl.assignment = assignment;
  return assignment;
}

void Client::leave() {
  std::shared_ptr<detail::Session> session;
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
    if (session) session->close();
    throw;
  }
  if (session) session->close();  // after Leave, so the daemon counts this as leaving, not failing
}

DaemonStatus Client::status(bool with_scope) const {
  llmrdzv::v1::StatusRequest request;
  if (with_scope) *request.mutable_scope() = impl_->scope;
  llmrdzv::v1::StatusResponse response;
  impl_->call("status", Idempotent::yes, std::chrono::milliseconds(0), [&](grpc::ClientContext& context) {
    return impl_->connection.stub->Status(&context, request, &response);
  });
  DaemonStatus result{response.version(), response.uptime_ms(), response.mode(), {}, {}};
  for (const auto& rendezvous : response.rendezvous()) result.rendezvous.push_back(rendezvous_status_of(rendezvous));
  const auto& totals = response.totals();
  result.totals = {totals.rendezvous(), totals.members(), totals.waiting(), totals.kv_bytes()};
  return result;
}

const Options& Client::options() const { return impl_->options; }
const std::string& Client::endpoint() const { return impl_->connection.endpoint; }

std::optional<Assignment> Client::assignment() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->assignment;
}

}  // namespace llmrdzv::client
