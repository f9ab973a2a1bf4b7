// The callback-driven participants of a benchmark run (see participant_run.hpp). Each participant
// is a small state machine; gRPC's callback threads advance it, and the main thread only releases
// phases and waits for them to finish.
#include "participant_run.hpp"

#include <grpcpp/grpcpp.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "bench_daemon.hpp"
#include "llmrdzv/client/handshake.hpp"
#include "llmrdzv/v1/rendezvous.grpc.pb.h"

namespace llmrdzv::bench {
namespace {

namespace v1 = llmrdzv::v1;
using Clock = std::chrono::steady_clock;

constexpr const char* kArrivedKey = "bench/arrived";
constexpr const char* kDoneKey = "bench/done";
constexpr const char* kBarrierKey = "bench/barrier";

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

double own_cpu_ms() {
  timespec cpu{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  return double(cpu.tv_sec) * 1e3 + double(cpu.tv_nsec) / 1e6;
}

// Counts participants through a phase; the main thread waits for all of them (or an error).
class PhaseCounter {
 public:
  explicit PhaseCounter(int expected) : left_(expected) {}
  void done() {
    std::lock_guard lock(mutex_);
    if (--left_ == 0) changed_.notify_all();
  }
  void fail(const std::string& error) {
    std::lock_guard lock(mutex_);
    if (error_.empty()) error_ = error;
    changed_.notify_all();
  }
  void wait(std::chrono::seconds timeout, const char* phase) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, timeout, [this] { return left_ == 0 || !error_.empty(); })) {
      throw std::runtime_error(std::string(phase) + ": " + std::to_string(left_) + " participants still busy after " +
                               std::to_string(timeout.count()) + " s");
    }
    if (!error_.empty()) throw std::runtime_error(std::string(phase) + ": " + error_);
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int left_;
  std::string error_;
};

struct Shared {
  const RunConfig& config;
  v1::Scope scope;
  Clock::time_point release;
  PhaseCounter baseline;
  PhaseCounter timed;
  std::atomic<int> sessions_open{0};
  PhaseCounter sessions_done;
  PhaseCounter left;           // Leave answered
  PhaseCounter left_announced;  // MEMBER_LEFT events read: N-1 (only a round's first leave is told)
};

// One participant. Calls are chained from their completion callbacks; the session reactor keeps
// reading events until the stream is cancelled at the end of the run.
class Participant : public grpc::ClientBidiReactor<v1::SessionRequest, v1::SessionEvent> {
 public:
  Participant(Shared& shared, int index, RunResult& result)
      : shared_(shared), index_(index), result_(result) {
    // The client library's channel arguments (rdzvd/client/src/connector.cpp), so the server
    // sees the traffic real ranks make: no gRPC retries (the library retries itself), no BDP
    // pings.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // its own TCP connection
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    channel_ = grpc::CreateCustomChannel(shared.config.endpoint, grpc::InsecureChannelCredentials(), args);
    stub_ = v1::Rendezvous::NewStub(channel_);
  }

  bool connect(std::chrono::system_clock::time_point deadline) { return channel_->WaitForConnected(deadline); }

  // The handshake the client library runs at connect: the daemon proves it holds the token,
  // and its answer carries the ticket every later request shows and what the daemon speaks.
  llmrdzv::client::HelloResult hello() {
    const auto port = std::uint16_t(std::stoul(shared_.config.endpoint.substr(shared_.config.endpoint.rfind(':') + 1)));
    return llmrdzv::client::hello(*stub_, shared_.config.rdzv_id, shared_.config.token, port,
                                  std::chrono::duration_cast<std::chrono::milliseconds>(shared_.config.timeout));
  }

  void start_baseline() {
    contexts_.emplace_back(std::make_unique<grpc::ClientContext>());
    credential(*contexts_.back());
    stub_->async()->Status(contexts_.back().get(), &status_request_, &status_response_, [this](grpc::Status status) {
      if (!status.ok()) return shared_.baseline.fail(describe("Status", status));
      result_.baseline_ms[std::size_t(index_)] = ms_between(shared_.release, Clock::now());
      shared_.baseline.done();
    });
  }

  void start_timed() {
    join_request_.mutable_scope()->CopyFrom(shared_.scope);
    join_request_.set_participant_id("bench-" + std::to_string(index_));
    join_request_.set_host("bench-host-" + std::to_string(index_ % 8));  // as if 8 nodes
    join_request_.set_requested_rank(-1);
    join_request_.set_local_rank(-1);
    join_request_.set_min_participants(shared_.config.participants);
    join_request_.set_max_participants(shared_.config.participants);
    join_request_.set_timeout_ms(std::uint32_t(shared_.config.timeout.count() * 1000));
    if (shared_.config.protocol == Protocol::stream) return open_session();
    stub_->async()->Join(next_context(), &join_request_, &join_response_, [this](grpc::Status status) {
      if (!status.ok()) return shared_.timed.fail(describe("Join", status));
      result_.join_ms[std::size_t(index_)] = ms_between(shared_.release, Clock::now());
      open_session();
    });
  }

  // Leaves gracefully, as a rank at the end of its job does (the session stays open).
  void leave() {
    leave_request_.mutable_scope()->CopyFrom(shared_.scope);
    leave_request_.set_participant_id(join_request_.participant_id());
    stub_->async()->Leave(next_context(), &leave_request_, &leave_response_, [this](grpc::Status status) {
      if (!status.ok()) return shared_.left.fail(describe("Leave", status));
      shared_.left.done();
    });
  }

  // Ends the session stream; OnDone reports to sessions_done.
  void cancel_session() { session_context_.TryCancel(); }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream is ending; OnDone follows
    if (event_.kind() == v1::SessionEvent::OPENED && !opened_) {
      opened_ = true;
      result_.opened_ms[std::size_t(index_)] = ms_between(shared_.release, Clock::now());
      if (shared_.config.protocol == Protocol::stream) {
        join_response_ = event_.assignment();
        result_.join_ms[std::size_t(index_)] = result_.opened_ms[std::size_t(index_)];
      }
      if (shared_.config.barrier == BarrierKind::add_wait) {
        add();
      } else if (shared_.config.protocol == Protocol::stream) {
        barrier_on_stream();
      } else {
        barrier();
      }
    } else if (event_.kind() == v1::SessionEvent::CALL_DONE) {
      if (event_.code() != 0) {
        const grpc::Status status(grpc::StatusCode(event_.code()), event_.detail());
        return shared_.timed.fail(describe("SessionCall", status));
      }
      passed();
    } else if (event_.kind() == v1::SessionEvent::MEMBER_LEFT) {
      shared_.left_announced.done();
    }
    StartRead(&event_);
  }
  void OnWriteDone(bool) override {
    std::lock_guard lock(write_mutex_);
    writing_ = false;
    if (next_write_) write_locked(std::exchange(next_write_, nullptr));
  }
  void OnDone(const grpc::Status& status) override {
    if (!opened_) shared_.timed.fail(describe("Session", status));
    shared_.sessions_done.done();
  }

 private:
  grpc::ClientContext* next_context() {
    contexts_.emplace_back(std::make_unique<grpc::ClientContext>());
    contexts_.back()->set_deadline(std::chrono::system_clock::now() + shared_.config.timeout);
    credential(*contexts_.back());
    return contexts_.back().get();
  }

  // The ticket in the call's metadata, which rdzvd checks before it reads the call.
  void credential(grpc::ClientContext& context) const {
    llmrdzv::client::add_credential(context, shared_.scope.rdzv_id(), shared_.scope.ticket());
  }

  std::string describe(const char* call, const grpc::Status& status) const {
    return "participant " + std::to_string(index_) + ": " + call + " failed: " + status.error_message() + " (code " +
           std::to_string(int(status.error_code())) + ")";
  }

  // After the Join (Protocol::calls), or carrying it (Protocol::stream).
  void open_session() {
    if (shared_.config.protocol == Protocol::stream) {
      *session_open_.mutable_open()->mutable_join() = join_request_;
    } else {
      session_open_.mutable_open()->mutable_scope()->CopyFrom(shared_.scope);
      session_open_.mutable_open()->set_participant_id(join_request_.participant_id());
      session_open_.mutable_open()->set_round(join_response_.round());
    }
    shared_.sessions_open.fetch_add(1);
    credential(session_context_);
    stub_->async()->Session(&session_context_, this);
    write(&session_open_);
    StartRead(&event_);
    StartCall();
  }

  // One write in flight on the stream: a second one waits for OnWriteDone.
  void write(const v1::SessionRequest* request) {
    std::lock_guard lock(write_mutex_);
    if (writing_) {
      next_write_ = request;
    } else {
      write_locked(request);
    }
  }
  void write_locked(const v1::SessionRequest* request) {
    writing_ = true;
    StartWrite(request);
  }

  void add() {
    add_request_.mutable_scope()->CopyFrom(shared_.scope);
    add_request_.set_round(join_response_.round());
    add_request_.set_key(kArrivedKey);
    add_request_.set_delta(1);
    stub_->async()->Add(next_context(), &add_request_, &add_response_, [this](grpc::Status status) {
      if (!status.ok()) return shared_.timed.fail(describe("Add", status));
      result_.added_ms[std::size_t(index_)] = ms_between(shared_.release, Clock::now());
      if (add_response_.value() == join_response_.world_size()) {
        set_done();
      } else {
        wait_done();
      }
    });
  }

  void set_done() {
    set_request_.mutable_scope()->CopyFrom(shared_.scope);
    set_request_.set_round(join_response_.round());
    set_request_.set_key(kDoneKey);
    set_request_.set_value("1");
    stub_->async()->Set(next_context(), &set_request_, &set_response_, [this](grpc::Status status) {
      if (!status.ok()) return shared_.timed.fail(describe("Set", status));
      wait_done();
    });
  }

  // The Wait on the stream (Protocol::stream, as the client library does), else as its own call.
  void wait_done() {
    v1::WaitRequest& request =
        shared_.config.protocol == Protocol::stream ? *session_call_.mutable_call()->mutable_wait() : wait_request_;
    request.mutable_scope()->CopyFrom(shared_.scope);
    request.set_round(join_response_.round());
    request.add_keys(kDoneKey);
    request.set_timeout_ms(std::uint32_t(shared_.config.timeout.count() * 1000));
    if (shared_.config.protocol == Protocol::stream) return write_call();
    stub_->async()->Wait(next_context(), &wait_request_, &wait_response_, [this](grpc::Status status) {
      if (!status.ok()) return shared_.timed.fail(describe("Wait", status));
      passed();
    });
  }

  // The store barrier as the client library makes it (KvSpace::barrier, which the trainer's
  // c10d store uses): one Barrier call that adds 1 and returns once the key reaches the world size.
  void barrier() {
    barrier_request_.mutable_scope()->CopyFrom(shared_.scope);
    barrier_request_.set_round(join_response_.round());
    barrier_request_.set_key(kBarrierKey);
    barrier_request_.set_world_size(join_response_.world_size());
    barrier_request_.set_timeout_ms(std::uint32_t(shared_.config.timeout.count() * 1000));
    stub_->async()->Barrier(next_context(), &barrier_request_, &barrier_response_, [this](grpc::Status status) {
      if (!status.ok()) return shared_.timed.fail(describe("Barrier", status));
      passed();
    });
  }

  // The barrier as the client library makes it on the one stream: a SessionCall answered by a
  // CALL_DONE event.
  void barrier_on_stream() {
    v1::BarrierRequest& request = *session_call_.mutable_call()->mutable_barrier();
    request.mutable_scope()->CopyFrom(shared_.scope);
    request.set_round(join_response_.round());
    request.set_key(kBarrierKey);
    request.set_world_size(join_response_.world_size());
    request.set_timeout_ms(std::uint32_t(shared_.config.timeout.count() * 1000));
    write_call();
  }

  void write_call() {
    session_call_.mutable_call()->set_id(1);
    write(&session_call_);
  }

  void passed() {
    result_.total_ms[std::size_t(index_)] = ms_between(shared_.release, Clock::now());
    shared_.timed.done();
  }

  Shared& shared_;
  const int index_;
  RunResult& result_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Rendezvous::Stub> stub_;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts_;  // one per unary call, alive until the end
  grpc::ClientContext session_context_;
  bool opened_ = false;
  std::mutex write_mutex_;
  bool writing_ = false;
  const v1::SessionRequest* next_write_ = nullptr;

  v1::StatusRequest status_request_;
  v1::StatusResponse status_response_;
  v1::JoinRequest join_request_;
  v1::JoinResponse join_response_;
  v1::SessionRequest session_open_;
  v1::SessionRequest session_call_;
  v1::SessionEvent event_;
  v1::AddRequest add_request_;
  v1::AddResponse add_response_;
  v1::SetRequest set_request_;
  v1::SetResponse set_response_;
  v1::WaitRequest wait_request_;
  v1::WaitResponse wait_response_;
  v1::BarrierRequest barrier_request_;
  v1::BarrierResponse barrier_response_;
  v1::LeaveRequest leave_request_;
  v1::LeaveResponse leave_response_;
};

}  // namespace

RunResult run_participants(const RunConfig& config) {
  const auto n = std::size_t(config.participants);
  RunResult result;
  result.baseline_ms.resize(n);
  result.join_ms.resize(n);
  result.opened_ms.resize(n);
  result.added_ms.resize(n);
  result.total_ms.resize(n);
  const int n_left_events = config.participants - 1;
  Shared shared{config,
                {},
                {},
                PhaseCounter(config.participants),
                PhaseCounter(config.participants),
                {},
                PhaseCounter(config.participants),
                PhaseCounter(config.participants),
                PhaseCounter(n_left_events)};
  shared.scope.set_rdzv_id(config.rdzv_id);

  const auto connect_start = Clock::now();
  std::vector<std::unique_ptr<Participant>> participants;
  for (std::size_t i = 0; i < n; ++i) participants.push_back(std::make_unique<Participant>(shared, int(i), result));
  const auto connect_deadline = std::chrono::system_clock::now() + config.timeout;
  for (auto& participant : participants) {
    if (!participant->connect(connect_deadline)) throw std::runtime_error("cannot connect to " + config.endpoint);
  }
  result.connect_wall_ms = ms_between(connect_start, Clock::now());
  const llmrdzv::client::HelloResult hello = participants.front()->hello();
  if (hello.outcome != llmrdzv::client::HelloOutcome::proven)
    throw std::runtime_error("rdzvd " + config.endpoint + " " + hello.reason);
  shared.scope.set_ticket(hello.ticket);  // the same for every participant: it depends on token, id and daemon
  const auto speaks = [&](const char* feature) {
    return std::find(hello.features.begin(), hello.features.end(), feature) != hello.features.end();
  };
  if (config.protocol == Protocol::stream && !(speaks("session-join") && speaks("session-calls"))) {
    throw std::runtime_error("rdzvd " + config.endpoint + " does not advertise session-join and session-calls");
  }

  shared.release = Clock::now();
  for (auto& participant : participants) participant->start_baseline();
  shared.baseline.wait(config.timeout, "baseline");

  if (config.hold.count() > 0) {
    std::fprintf(stderr, "rdzv-bench: timed phase in %lld ms\n", static_cast<long long>(config.hold.count()));
    std::this_thread::sleep_for(config.hold);
  }
  const double client_cpu_start = own_cpu_ms();
  const auto daemon_cpu_start = config.daemon_pid > 0 ? cpu_time_ms(config.daemon_pid) : std::nullopt;
  shared.release = Clock::now();
  for (auto& participant : participants) participant->start_timed();
  std::optional<std::string> failure;
  try {
    shared.timed.wait(config.timeout, "round + barrier");
  } catch (const std::exception& error) {
    failure = error.what();
  }
  result.client_cpu_ms = own_cpu_ms() - client_cpu_start;
  const auto daemon_cpu_end = config.daemon_pid > 0 ? cpu_time_ms(config.daemon_pid) : std::nullopt;
  if (daemon_cpu_start && daemon_cpu_end) result.daemon_cpu_ms = *daemon_cpu_end - *daemon_cpu_start;
  if (config.hold.count() > 0) {
    std::fprintf(stderr, "rdzv-bench: timed phase over, closing in %lld ms\n", static_cast<long long>(config.hold.count()));
    std::this_thread::sleep_for(config.hold);
  }

  // The end of a job: everyone leaves at once, and every member still in the round hears of it.
  if (!failure) {
    const auto leave_cpu_start = config.daemon_pid > 0 ? cpu_time_ms(config.daemon_pid) : std::nullopt;
    const auto leave_start = Clock::now();
    for (auto& participant : participants) participant->leave();
    try {
      shared.left.wait(config.timeout, "leave");
      shared.left_announced.wait(config.timeout, "MEMBER_LEFT events");
      result.leave_wall_ms = ms_between(leave_start, Clock::now());
      result.member_left_events = n_left_events;
    } catch (const std::exception& error) {
      failure = error.what();
    }
    const auto leave_cpu_end = config.daemon_pid > 0 ? cpu_time_ms(config.daemon_pid) : std::nullopt;
    if (leave_cpu_start && leave_cpu_end) result.leave_daemon_cpu_ms = *leave_cpu_end - *leave_cpu_start;
  }

  // Sessions must end (OnDone) before their reactors are destroyed.
  const int open_sessions = shared.sessions_open.load();
  for (int i = open_sessions; i < config.participants; ++i) shared.sessions_done.done();
  for (auto& participant : participants) participant->cancel_session();
  shared.sessions_done.wait(config.timeout, "closing sessions");
  if (failure) throw std::runtime_error(*failure);

  for (std::size_t i = 0; i < n; ++i) {
    result.baseline_wall_ms = std::max(result.baseline_wall_ms, result.baseline_ms[i]);
    result.wall_ms = std::max(result.wall_ms, result.total_ms[i]);
  }
  return result;
}

}  // namespace llmrdzv::bench
