// Protobuf <-> core conversions and the status-code mapping (see wire.hpp).
#include "wire.hpp"

namespace llmrdzv::server {

grpc::Status to_grpc(const core::Status& status) {
  using core::Code;
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  switch (status.code) {
    case Code::ok: return grpc::Status::OK;
    case Code::not_found: code = grpc::StatusCode::NOT_FOUND; break;
    case Code::permission_denied: code = grpc::StatusCode::PERMISSION_DENIED; break;
    case Code::invalid_argument: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case Code::resource_exhausted: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case Code::failed_precondition: code = grpc::StatusCode::FAILED_PRECONDITION; break;
    case Code::aborted: code = grpc::StatusCode::ABORTED; break;
    case Code::deadline_exceeded: code = grpc::StatusCode::DEADLINE_EXCEEDED; break;
    case Code::unavailable: code = grpc::StatusCode::UNAVAILABLE; break;
    case Code::cancelled: code = grpc::StatusCode::CANCELLED; break;
  }
  return grpc::Status(code, status.message);
}

core::Scope from_wire(const llmrdzv::v1::Scope& scope) { return {scope.rdzv_id(), scope.ticket()}; }

core::HelloRequest from_wire(const llmrdzv::v1::HelloRequest& request) {
  return {request.rdzv_id(), request.key_id(), request.client_nonce()};
}

core::JoinRequest from_wire(const llmrdzv::v1::JoinRequest& request) {
  core::JoinRequest r;
  r.scope = from_wire(request.scope());
  r.participant_id = request.participant_id();
  r.requested_rank = request.requested_rank();
  r.host = request.host();
  r.local_rank = request.local_rank();
  r.min_participants = request.min_participants();
  r.max_participants = request.max_participants();
  r.last_call_ms = request.last_call_ms();
  r.timeout_ms = request.timeout_ms();
  return r;
}

void to_wire(const core::Assignment& a, llmrdzv::v1::JoinResponse& response) {
  response.set_round(a.round);
  response.set_rank(a.rank);
  response.set_world_size(a.world_size);
  response.set_local_rank(a.local_rank);
  response.set_local_world_size(a.local_world_size);
  response.set_node_rank(a.node_rank);
  response.set_num_nodes(a.num_nodes);
  response.set_master_host(a.master_host);
  response.set_heartbeat_interval_ms(a.heartbeat_interval_ms);
  response.set_heartbeat_timeout_ms(a.heartbeat_timeout_ms);
}

void to_wire(const core::SessionEvent& event, llmrdzv::v1::SessionEvent& wire) {
  using Wire = llmrdzv::v1::SessionEvent;
  switch (event.kind) {
    case core::EventKind::opened: wire.set_kind(Wire::OPENED); break;
    case core::EventKind::member_failed: wire.set_kind(Wire::MEMBER_FAILED); break;
    case core::EventKind::member_left: wire.set_kind(Wire::MEMBER_LEFT); break;
    case core::EventKind::round_closed: wire.set_kind(Wire::ROUND_CLOSED); break;
    case core::EventKind::participant_waiting: wire.set_kind(Wire::PARTICIPANT_WAITING); break;
    case core::EventKind::shutdown: wire.set_kind(Wire::SHUTDOWN); break;
  }
  wire.set_round(event.round);
  wire.set_rank(event.rank);
  wire.set_detail(event.detail);
}

void to_wire(const core::DaemonInfo& info, llmrdzv::v1::StatusResponse& response) {
  response.set_uptime_ms(info.uptime_ms);
  response.set_mode(info.mode);
  auto* totals = response.mutable_totals();
  totals->set_rendezvous(info.totals.rendezvous);
  totals->set_members(info.totals.members);
  totals->set_waiting(info.totals.waiting);
  totals->set_kv_bytes(info.totals.kv_bytes);
  for (const auto& r : info.rendezvous) {
    auto* out = response.add_rendezvous();
    out->set_rdzv_id(r.rdzv_id);
    out->set_round(r.round);
    out->set_state(r.state);
    out->set_min_participants(r.min_participants);
    out->set_max_participants(r.max_participants);
    out->set_joined(r.joined);
    out->set_members(r.members);
    out->set_waiting(r.waiting);
    out->set_num_keys(r.num_keys);
    out->set_kv_bytes(r.kv_bytes);
    out->set_age_ms(r.age_ms);
    for (const auto& m : r.member_details) {
      auto* member = out->add_member_details();
      member->set_participant_id(m.participant_id);
      member->set_rank(m.rank);
      member->set_host(m.host);
      member->set_local_rank(m.local_rank);
      member->set_last_heartbeat_age_ms(m.last_heartbeat_age_ms);
      member->set_session_open(m.session_open);
    }
  }
}

}  // namespace llmrdzv::server
