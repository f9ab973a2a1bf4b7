// DistributedEngine: the TrainingEngine for many ranks (see distributed_engine.hpp). Plain data
// parallel delegates the optimizer to the one-process engine (the fused SIMD AdamW on CPUs,
// torch's multi-tensor fused AdamW on GPUs) after the gradients are averaged, so one rank and many ranks step identically; --offload optimizer
// uses OffloadAdamW on the flat gradient buffer. The failure watch ends or (elastic) restarts
// the rank when another one fails.
#include "llmrdzv/dist/distributed_engine.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/syscall.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <thread>

#include "llmrdzv/client/client.hpp"
#include "llmrdzv/dist/gpu_check.hpp"
#include "llmrdzv/dist/gradient_buckets.hpp"
#include "llmrdzv/dist/offload_optimizer.hpp"
#include "llmrdzv/dist/rank_resources.hpp"
#include "llmrdzv/dist/rdzv_store.hpp"
#include "llmrdzv/dist/sharded_step.hpp"
#include "llmrdzv/engine/master_weights.hpp"
#include "llmrdzv/engine/single_process_engine.hpp"

namespace llmrdzv::dist {
namespace {

using engine::AdamWSettings;
using engine::NamedParameter;
using engine::TensorMap;

constexpr const char* kRestartCountVar = "LLM_RDZV_RESTART_COUNT";
constexpr const char* kRestartReasonVar = "LLM_RDZV_RESTART_REASON";
constexpr const char* kMaxRestartsVar = "LLM_RDZV_MAX_RESTARTS";

// Set by the first session event that ends this process (exit or restart).
std::atomic<bool> g_watch_acting{false};

// One line to stderr in one write, so ranks sharing a terminal or log do not interleave.
void say(const std::string& line) {
  const std::string text = line + '\n';
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
}

[[noreturn]] void block_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

std::string restart_count_text(int count, int max) {
  return "restart " + std::to_string(count) + " of " + std::to_string(max);
}

// Every descriptor but stdin/stdout/stderr closes on exec: the old process group's sockets and
// the rdzvd connection must go with the old process.
void close_on_exec_from_3() {
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(dir);
    while (const dirent* entry = ::readdir(dir)) {
      int fd = -1;
      const char* name = entry->d_name;
      if (std::from_chars(name, name + std::strlen(name), fd).ec != std::errc() || fd < 3 || fd == own) continue;
      ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC);
    }
    ::closedir(dir);
  }
}

// Reacts to session events: another member failing (or the round/daemon going away) ends this
// rank at once, because a collective with a dead or hung peer would otherwise block until its
// timeout. Gloo has no abort; exiting (or, elastic, re-executing) is the prompt and certain way
// out. Runs on the client's session thread.
class FailureWatch {
 public:
  struct Elastic {
    ElasticRestart restart;
    RestartBudget budget;
  };

  explicit FailureWatch(std::optional<Elastic> elastic = std::nullopt) : elastic_(std::move(elastic)) {}

  void arm(const client::Assignment& assignment) {
    grace_ms_ = assignment.heartbeat_timeout.count() + 2000;
    rank_ = assignment.rank;
  }
  void disarm() { disarmed_ = true; }

  void operator()(const client::SessionEvent& event) {
    using Kind = client::SessionEvent::Kind;
    if (disarmed_ || event.kind == Kind::member_left || event.kind == Kind::participant_waiting) return;
    if (g_watch_acting.exchange(true)) return;  // one event ends the process
    std::fflush(stdout);
    const std::string what = event.kind == Kind::member_failed ? "rank " + std::to_string(event.rank) + " failed"
                                                                : std::string(client::event_kind_name(event.kind));
    std::string outcome;
    if (elastic_ && (event.kind == Kind::member_failed || event.kind == Kind::round_closed)) {
      outcome = restart(what + " in round " + std::to_string(event.round));  // returns only when it cannot
    }
    say("\ntrainer: error: rank " + std::to_string(rank_) + " stops: " + what + " in round " +
        std::to_string(event.round) + (event.detail.empty() ? "" : " (" + event.detail + ")") + outcome);
    std::_Exit(kPeerFailedExitCode);
  }

  // The main thread after a collective failed: a peer's death breaks collectives about when rdzvd
  // reports it, so give the session event up to the heartbeat timeout (+2 s) to arrive and act.
  void await_verdict() const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms_.load());
    while (!g_watch_acting && !disarmed_ && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    yield_to_failure_watch();
  }

 private:
  // Re-executes this process into the next round; returns why it could not.
  std::string restart(const std::string& failure) {
    const RestartBudget& budget = elastic_->budget;
    if (budget.done >= budget.max) {
      return "; no restarts left (this rank restarted " + std::to_string(budget.done) + " times, " + kMaxRestartsVar +
             "=" + std::to_string(budget.max) + ")";
    }
    // For the message: the restarted ranks decide together which checkpoint they resume from
    // (rank 0 looks again once the next round formed; see the header).
    std::optional<std::string> checkpoint;
    try {
      if (elastic_->restart.latest_checkpoint) checkpoint = elastic_->restart.latest_checkpoint();
    } catch (const std::exception& e) {
      return std::string("; cannot restart: cannot look for checkpoints: ") + e.what();
    }
    const int count = budget.done + 1;
    say("trainer: rank " + std::to_string(rank_) + ": " + failure + "; re-joining the rendezvous, " +
        (checkpoint ? "resuming from " + *checkpoint : std::string("starting over (no checkpoint yet)")) + " (" +
        restart_count_text(count, budget.max) + ")");

    const std::vector<std::string>& args = elastic_->restart.argv;
    std::vector<std::string> env;
    for (char** entry = environ; *entry; ++entry) {
      const std::string_view text(*entry);
      if (text.starts_with(std::string(kRestartCountVar) + "=") || text.starts_with(std::string(kRestartReasonVar) + "=")) {
        continue;
      }
      env.emplace_back(text);
    }
    env.push_back(std::string(kRestartCountVar) + "=" + std::to_string(count));
    env.push_back(std::string(kRestartReasonVar) + "=" + failure);
    std::vector<char*> raw_args, raw_env;
    for (const std::string& a : args) raw_args.push_back(const_cast<char*>(a.c_str()));
    raw_args.push_back(nullptr);
    for (const std::string& e : env) raw_env.push_back(const_cast<char*>(e.c_str()));
    raw_env.push_back(nullptr);

    std::fflush(nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::pthread_sigmask(SIG_SETMASK, &none, nullptr);  // this thread's mask would be the new process'
    close_on_exec_from_3();
    ::execve("/proc/self/exe", raw_args.data(), raw_env.data());
    return std::string("; cannot restart: execve /proc/self/exe: ") + std::strerror(errno);
  }

  std::optional<Elastic> elastic_;
  std::atomic<int> rank_{-1};
  std::atomic<std::int64_t> grace_ms_{12000};
  std::atomic<bool> disarmed_{false};
};

class DistributedEngine final : public engine::TrainingEngine {
 public:
  DistributedEngine(const engine::EngineOptions& options, std::shared_ptr<client::Client> client,
                    std::shared_ptr<FailureWatch> watch, const client::Assignment& assignment,
                    c10::Device device, c10::intrusive_ptr<c10d::Backend> backend)
      : options_(options),
        client_(std::move(client)),
        watch_(std::move(watch)),
        assignment_(assignment),
        device_(device),
        backend_(std::move(backend)) {
    if (options_.offload_chunk_mb <= 0) {
      throw std::invalid_argument("--offload_chunk_mb must be > 0, got " + std::to_string(options_.offload_chunk_mb));
    }
    if (options_.ddp_bucket_cap_mb <= 0) {
      throw std::invalid_argument("--ddp_bucket_cap_mb must be > 0, got " +
                                  std::to_string(options_.ddp_bucket_cap_mb));
    }
    if (options_.shard_parameters && device_.is_cuda()) {
      // Nothing in the schedule is CPU-only, but it has not yet run on a GPU here: until it has,
      // a GPU run is refused rather than trusted.
      throw std::invalid_argument(
          "--shard_parameters trains on the CPU (Gloo) in this version; on GPUs use --offload optimizer, or --use_cpu");
    }
  }

  ~DistributedEngine() override {
    watch_->disarm();
    // Unwinding after an error: no Leave, so rdzvd reports this rank as failed to the others
    // (they stop or restart) instead of leaving them in a collective with a rank that is gone.
    if (std::uncaught_exceptions() > 0) return;
    if (sharded_) say(sharded_->residency_report(rank()));
    shut_down_process_group();
    try {
      client_->leave();
    } catch (const std::exception&) {
      // The daemon may already be gone at the end of a run; nothing left to tell it.
    }
  }

  int rank() const override { return assignment_.rank; }
  int world_size() const override { return assignment_.world_size; }
  c10::Device device() const override { return device_; }

  void attach(std::vector<NamedParameter> parameters, const AdamWSettings& settings) override {
    guarded([&] { attach_parameters(std::move(parameters), settings, nullptr); });
  }

  void attach_deferred(std::vector<NamedParameter> parameters, const AdamWSettings& settings,
                       const engine::DeferredValues& values) override {
    if (!options_.shard_parameters) {
      throw std::logic_error("a model built without its values needs --shard_parameters (the engine holds it whole)");
    }
    guarded([&] { attach_parameters(std::move(parameters), settings, &values); });
  }

  void begin_micro_step(bool last_micro_step) override {
    guarded([&] {
      if (sharded_) return sharded_->begin_micro_step();
      // bf16/fp16 gradients accumulate in the fp32 buffer (offloaded, the hooks already moved them
      // into the buffer of their own type: nothing is left to fold).
      if (low_precision_) buckets_->fold();
      buckets_->begin_micro_step(last_micro_step);
    });
  }

  engine::GradientNorm finish_gradients(double max_norm, double gradient_multiplier) override {
    return guarded([&] { return synchronise_and_clip(max_norm, gradient_multiplier); });
  }

  void optimizer_step(double learning_rate) override {
    guarded([&] {
      if (sharded_) {
        sharded_->optimizer_step(learning_rate);
      } else if (offload_) {
        const std::int64_t delay_after = options_.offload_delayed_update;
        if (delay_after > 0 && offload_->steps_taken() >= delay_after) {
          offload_->step_delayed(buckets_->flat(), learning_rate, grad_scale_);
        } else {
          offload_->step(buckets_->flat(), learning_rate, grad_scale_.item<double>());
        }
        comm_wait_ += offload_->last_gather_wait_seconds();
      } else {
        replica_->optimizer_step(learning_rate);
        if (masters_) masters_->write_back();
      }
      drop_gradients();
    });
  }

  void skip_step() override {
    if (sharded_) sharded_->skip_step();
    if (replica_) replica_->skip_step();
    drop_gradients();
  }

  void complete_updates() override {
    if (sharded_) return;  // every update is in the shards already
    if (!offload_ || !offload_->update_pending()) return;
    guarded([&] {
      offload_->complete_update();
      comm_wait_ += offload_->last_gather_wait_seconds();
    });
  }

  std::vector<double> all_reduce_sum(std::vector<double> values) override {
    if (values.empty()) return values;
    return guarded([&] {
      auto t = at::tensor(values, at::TensorOptions().dtype(at::kDouble)).to(device_);
      std::vector<at::Tensor> tensors{t};
      wait(backend_->allreduce(tensors));
      t = t.to(at::kCPU);
      return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
    });
  }

  void barrier() override {
    guarded([&] { wait(backend_->barrier()); });
  }

  double comm_wait_seconds() const override { return comm_wait_ + (sharded_ ? sharded_->wait_seconds() : 0.0); }

  engine::ParameterUnits* parameter_units() override { return sharded_ ? &sharded_->units() : nullptr; }

  TensorMap optimizer_state() const override {
    if (sharded_) return sharded_->optimizer_state();
    if (offload_) return offload_->state();
    TensorMap state = replica_->optimizer_state();
    if (masters_) masters_->save(state);
    return state;
  }

  void load_optimizer_state(const TensorMap& saved) override {
    if (sharded_) return sharded_->load_optimizer_state(saved);
    if (offload_) return offload_->load_state(saved);
    TensorMap state = saved;
    if (masters_) masters_->load(state);  // takes its entries out
    replica_->load_optimizer_state(state);
  }

 private:
  // Every call that talks to other ranks: when it fails because a peer died, the failure watch is
  // about to act on rdzvd's report (exit 3 or restart); give it the chance instead of failing
  // with the broken collective's message.
  template <class F>
  auto guarded(F&& f) -> decltype(f()) {
    try {
      const EngineCall call(in_engine_call_);
      return f();
    } catch (const std::exception&) {
      watch_->await_verdict();
      throw;
    }
  }

  // Marks the time inside guarded(), where a failure already waits for the verdict once.
  struct EngineCall {
    explicit EngineCall(bool& flag) : flag_(flag), outer_(flag) { flag_ = true; }
    ~EngineCall() { flag_ = outer_; }
    EngineCall(const EngineCall&) = delete;
    EngineCall& operator=(const EngineCall&) = delete;
    bool& flag_;
    bool outer_;
  };

  // Waits for a collective, counting the time in comm_wait_.
  void wait(const c10::intrusive_ptr<c10d::Work>& work) {
    const auto start = std::chrono::steady_clock::now();
    work->wait();
    comm_wait_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // `deferred`: the values come unit by unit (ShardedUnits), else rank 0's are broadcast first.
  void attach_parameters(std::vector<NamedParameter> parameters, const AdamWSettings& settings,
                         const engine::DeferredValues* deferred) {
    if (!deferred) broadcast_from_rank0(parameters);
    std::vector<at::Tensor> tensors;
    for (const auto& p : parameters) {
      tensors.push_back(p.tensor);
      low_precision_ = low_precision_ || (deferred ? deferred->dtype : p.tensor.scalar_type()) != at::kFloat;
    }
    if (parameters.empty()) throw std::invalid_argument("the model has no trainable parameters");
    if (options_.shard_parameters) {
      // A gather in the model's forward or autograd's backward fails outside guarded().
      sharded_ = std::make_unique<ShardedStep>(
          parameters, settings, options_, backend_, [this] { if (!in_engine_call_) watch_->await_verdict(); }, deferred);
      return;
    }
    const bool offload = options_.offload == engine::Offload::optimizer;
    // Offloaded, the device keeps gradients only in the parameters' type (see GradientBufferOptions).
    const GradientBufferOptions buffer =
        offload ? GradientBufferOptions{parameters.front().tensor.scalar_type(), /*release_parameter_gradients=*/true}
                : GradientBufferOptions{};
    buckets_ = std::make_unique<GradientBuckets>(
        tensors, backend_, static_cast<std::size_t>(options_.ddp_bucket_cap_mb) << 20, buffer);
    if (offload) {
      const bool reduce = options_.offload_gradient_sync == engine::OffloadGradientSync::reduce ||
                          (options_.offload_gradient_sync == engine::OffloadGradientSync::automatic && device_.is_cuda());
      if (reduce) buckets_->reduce_to_owners();
      std::vector<OffloadParameter> offloaded;
      for (const auto& p : parameters) offloaded.push_back({p.tensor, p.decay});
      offload_ = std::make_unique<OffloadAdamW>(
          std::move(offloaded), buckets_->slots(), backend_,
          optim::AdamWHyperparams{.lr = 0, .beta1 = settings.beta1, .beta2 = settings.beta2,
                                  .eps = settings.epsilon, .weight_decay = settings.weight_decay},
          // As the one-process engine: torch's thread count (this rank's share of the node).
          optim::KernelOptions{.threads = static_cast<unsigned>(std::max(1, at::get_num_threads()))},
          (options_.offload_chunk_mb << 20) / static_cast<std::int64_t>(sizeof(float)));
      // A delayed update's gradient download may outlast the next forward: backward's first
      // gradient write waits for it, the forward does not.
      buckets_->set_write_barrier([this] {
        if (offload_) offload_->before_gradient_write();
      });
    } else {
      engine::EngineOptions local = options_;
      local.use_cpu = !device_.is_cuda();
      replica_ = engine::make_single_process_engine(local);
      // bf16/fp16 parameters: the replica's optimizer works on fp32 masters, which receive the
      // fp32 mean gradient straight from the buffer (never rounded to the parameters' type).
      if (low_precision_) masters_.emplace(parameters);
      replica_->attach(masters_ ? masters_->masters() : std::move(parameters), settings);
    }
  }

  engine::GradientNorm synchronise_and_clip(double max_norm, double gradient_multiplier) {
    if (sharded_) return sharded_->finish_gradients(max_norm, gradient_multiplier);
    buckets_->finish();
    comm_wait_ += buckets_->last_wait_seconds();
    if (!offload_) {
      masters_ ? buckets_->copy_to_grads_of(masters_->master_tensors()) : buckets_->copy_to_grads();
      return replica_->finish_gradients(max_norm, gradient_multiplier);
    }
    // The global norm from the shards (each rank may hold only its own): the sum of every rank's
    // squared shard, then torch's clip_grad_norm_ rule: scale by max_norm / (norm + 1e-6) when
    // that is below 1. All of it in double where the gradient is, with no read on the host here: a
    // delayed update reads the scale in its background thread, so the host goes on queueing the
    // next step while the device finishes this one.
    const ShardLayout shards = buckets_->shards();
    const at::Tensor own = buckets_->flat().narrow(0, shards.begin(rank()), shards.end(rank()) - shards.begin(rank()));
    // In double, a chunk at a time (no float rounding of the sum), summed where the gradient is:
    // one read of the result, not one per chunk.
    at::Tensor sum = at::zeros({}, own.options().dtype(at::kDouble));
    constexpr std::int64_t kChunk = std::int64_t{1} << 22;
    for (std::int64_t from = 0; from < own.numel(); from += kChunk) {
      const at::Tensor part = own.narrow(0, from, std::min(kChunk, own.numel() - from)).to(at::kDouble);
      sum += at::dot(part, part);
    }
    if (world_size() > 1) {
      std::vector<at::Tensor> squares{sum.reshape({1})};
      wait(backend_->allreduce(squares));
    }
    const at::Tensor norm = sum.sqrt() * gradient_multiplier;
    const at::Tensor multiplier = at::full({}, gradient_multiplier, norm.options());
    grad_scale_ = multiplier;
    if (max_norm > 0) {
      // Both operands on the device: a host scalar as the dividend may become a multiplication
      // by the reciprocal, which rounds differently.
      const at::Tensor clipped = at::clamp_max(at::full({}, max_norm, norm.options()) / (norm + 1e-6), 1.0) * multiplier;
      grad_scale_ = at::where(at::isfinite(norm), clipped, multiplier);
    }
    return engine::GradientNorm(norm);
  }

  void broadcast_from_rank0(const std::vector<NamedParameter>& parameters) {
    at::NoGradGuard no_grad;
    for (const auto& p : parameters) {
      // Gloo has no bf16: such parameters travel as fp32 (exactly: bf16 values are fp32 values).
      const bool widen = p.tensor.scalar_type() == at::kBFloat16;
      std::vector<at::Tensor> tensors{widen ? p.tensor.detach().to(at::kFloat) : p.tensor.detach()};
      wait(backend_->broadcast(tensors));
      if (widen) p.tensor.detach().copy_(tensors[0]);
    }
    attached_.clear();
    for (const auto& p : parameters) attached_.push_back(p.tensor);
  }

  void drop_gradients() {
    for (auto& p : attached_) p.mutable_grad().reset();
    if (masters_) masters_->zero_gradients();
  }

  // At a normal end, before the rendezvous is left: everything holding the process group lets go
  // of it, then the backend shuts down (NCCL destroys its communicators and stops its watchdog and
  // heartbeat threads, which otherwise poll the round's store after the rank has left it and warn
  // that destroy_process_group() was never called).
  void shut_down_process_group() {
    sharded_.reset();
    offload_.reset();
    buckets_.reset();
    replica_.reset();
    masters_.reset();
    try {
      backend_->shutdown();
    } catch (const std::exception& e) {
      say("trainer: warning: rank " + std::to_string(rank()) + ": process group shutdown: " + e.what());
    }
    backend_.reset();
  }

  engine::EngineOptions options_;
  std::shared_ptr<client::Client> client_;
  std::shared_ptr<FailureWatch> watch_;
  client::Assignment assignment_;
  c10::Device device_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  std::vector<at::Tensor> attached_;
  std::unique_ptr<GradientBuckets> buckets_;
  std::unique_ptr<OffloadAdamW> offload_;
  std::unique_ptr<ShardedStep> sharded_;  // --shard_parameters
  std::unique_ptr<engine::TrainingEngine> replica_;
  std::optional<engine::MasterWeights> masters_;  // replica path with bf16/fp16 parameters
  bool low_precision_ = false;                    // the parameters are bf16/fp16
  at::Tensor grad_scale_;  // the offloaded update's clipping scale, fp64 on the device (finish_gradients())
  double comm_wait_ = 0;  // comm_wait_seconds()
  bool in_engine_call_ = false;  // inside guarded()
};

}  // namespace

bool rendezvous_env_present() {
  const char* endpoint = std::getenv("RDZV_ENDPOINT");
  return endpoint != nullptr && *endpoint != '\0';
}

bool rendezvous_env_elastic() {
  const client::Options options = client::Options::from_env();
  return options.min_world < options.max_world;
}

namespace {

std::unique_ptr<engine::TrainingEngine> join_and_build(const engine::EngineOptions& options,
                                                       std::shared_ptr<client::Client> client,
                                                       std::shared_ptr<FailureWatch> watch,
                                                       const ProcessGroupSettings& settings,
                                                       const RestartBudget* restarted) {
  client::Assignment assignment;
  try {
    assignment = client->join([watch](const client::SessionEvent& event) { (*watch)(event); });
  } catch (const client::RdzvError& e) {
    if (!restarted) throw;
    const client::Options& o = client->options();
    std::string why = e.what();
    if (e.code() == client::ErrorCode::deadline_exceeded) {
      why = "the next round did not form within " + std::to_string(o.join_timeout.count() / 1000) +
            " s (LLM_RDZV_TIMEOUT): fewer than the minimum of " + std::to_string(o.min_world) +
            " ranks came back (" + why + ")";
    }
    throw RejoinError("could not re-join rendezvous '" + o.rdzv_id + "' after " +
                      (restarted->last_failure.empty() ? "a failure" : restarted->last_failure) + " (" +
                      restart_count_text(restarted->done, restarted->max) + "): " + why);
  }
  watch->arm(assignment);
  if (restarted) {
    say("trainer: re-joined rendezvous '" + client->options().rdzv_id + "' in round " +
        std::to_string(assignment.round) + " as rank " + std::to_string(assignment.rank) + " of " +
        std::to_string(assignment.world_size) + " (" + restart_count_text(restarted->done, restarted->max) + ")");
  }
  c10::Device device(c10::kCPU);
  if (!options.use_cpu && torch::cuda::is_available()) {
    const int visible = static_cast<int>(torch::cuda::device_count());
    const int index = cuda_device_for(assignment.local_rank, visible);
    device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
    if (assignment.rank == 0) say("trainer: rank 0 trains on " + describe_cuda_binding(index, visible));
  }
  // Ranks sharing a node share its cores, unless the user or the launcher said how many to use.
  if (options.threads == 0 && std::getenv("OMP_NUM_THREADS") == nullptr && assignment.local_world_size > 1) {
    at::set_num_threads(threads_per_rank(available_cpus(), node_cpus(), assignment.local_world_size));
  }
  if (device.is_cuda() && assignment.world_size > 1) {
    const auto gpus = c10::make_intrusive<RdzvStore>(client, assignment.round, "gpu-check/", settings.timeout);
    try {
      require_own_gpus(*gpus, assignment.world_size,
                       describe_cuda_device(assignment.rank, device.index(), static_cast<int>(torch::cuda::device_count())),
                       settings.timeout);
    } catch (const SharedGpuError&) {
      watch->disarm();  // every rank stops with this message, not with "rank N failed" from the first to exit
      throw;
    }
  }
  auto store = c10::make_intrusive<RdzvStore>(client, assignment.round, "pg/", settings.timeout);
  c10::intrusive_ptr<c10d::Backend> backend;
  try {
    backend = make_process_group(store, assignment.rank, assignment.world_size, device, settings);
  } catch (const std::exception&) {
    watch->await_verdict();  // a peer that died while the group formed: let the watch act on it
    throw;
  }
  return std::make_unique<DistributedEngine>(options, std::move(client), std::move(watch), assignment, device,
                                             std::move(backend));
}

int integer_env(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  int value = 0;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end || value < 0) {
    throw std::invalid_argument(std::string(name) + "='" + text + "' is not a whole number >= 0");
  }
  return value;
}

}  // namespace

RestartBudget restart_budget_from_env() {
  RestartBudget budget;
  budget.done = integer_env(kRestartCountVar, 0);
  budget.max = integer_env(kMaxRestartsVar, budget.max);
  if (const char* reason = std::getenv(kRestartReasonVar)) budget.last_failure = reason;
  return budget;
}

void yield_to_failure_watch() {
  if (g_watch_acting) block_forever();  // the watch's thread exits or re-executes the process
}

std::unique_ptr<engine::TrainingEngine> make_distributed_engine(const engine::EngineOptions& options,
                                                                const ProcessGroupSettings& settings) {
  return make_distributed_engine(options, std::make_shared<client::Client>(client::Options::from_env()),
                                 settings);
}

std::unique_ptr<engine::TrainingEngine> make_distributed_engine(const engine::EngineOptions& options,
                                                                std::shared_ptr<client::Client> client,
                                                                const ProcessGroupSettings& settings) {
  return join_and_build(options, std::move(client), std::make_shared<FailureWatch>(), settings, nullptr);
}

std::unique_ptr<engine::TrainingEngine> make_distributed_engine(const engine::EngineOptions& options,
                                                                ElasticRestart restart,
                                                                const ProcessGroupSettings& settings) {
  const RestartBudget budget = restart_budget_from_env();
  const client::Options client_options = client::Options::from_env();
  std::shared_ptr<client::Client> client;
  try {
    client = std::make_shared<client::Client>(client_options);
  } catch (const client::RdzvError& e) {
    if (budget.done == 0) throw;
    throw RejoinError("could not re-join rendezvous '" + client_options.rdzv_id + "' after " + budget.last_failure +
                      " (" + restart_count_text(budget.done, budget.max) + "): " + e.what());
  }
  std::optional<FailureWatch::Elastic> elastic;
  if (client_options.min_world < client_options.max_world) elastic = FailureWatch::Elastic{std::move(restart), budget};
  return join_and_build(options, std::move(client), std::make_shared<FailureWatch>(std::move(elastic)), settings,
                        budget.done > 0 ? &budget : nullptr);
}

}  // namespace llmrdzv::dist
