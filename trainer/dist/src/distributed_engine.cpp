// DistributedEngine: the TrainingEngine for many ranks (see distributed_engine.hpp). Plain data
// parallel delegates the optimizer to the one-process engine (torch::optim::AdamW) after the
// gradients are averaged, so one rank and many ranks step identically; --offload optimizer
// uses OffloadAdamW on the flat gradient buffer.
#include "llmrdzv/dist/distributed_engine.hpp"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/cuda.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "llmrdzv/client/client.hpp"
#include "llmrdzv/dist/gradient_buckets.hpp"
#include "llmrdzv/dist/offload_optimizer.hpp"
#include "llmrdzv/dist/rdzv_store.hpp"

namespace llmrdzv::dist {
namespace {

using train::AdamWSettings;
using train::NamedParameter;
using train::TensorMap;

// Reacts to session events: another member failing (or the round/daemon going away) ends this
// rank at once, because a collective with a dead or hung peer would otherwise block until its
// timeout. Gloo has no abort; exiting is the prompt and certain way out.
class FailureWatch {
 public:
  void arm(int rank) { rank_ = rank; }
  void disarm() { disarmed_ = true; }

  void operator()(const client::SessionEvent& event) {
    using Kind = client::SessionEvent::Kind;
    if (disarmed_ || event.kind == Kind::member_left || event.kind == Kind::participant_waiting) return;
    std::fflush(stdout);
    std::cerr << "\ntrainer: error: rank " << rank_ << " stops: "
              << (event.kind == Kind::member_failed ? "rank " + std::to_string(event.rank) + " failed"
                                                   : std::string(client::event_kind_name(event.kind)))
              << " in round " << event.round << (event.detail.empty() ? "" : " (" + event.detail + ")")
              << std::endl;
    std::_Exit(kPeerFailedExitCode);
  }

 private:
  std::atomic<int> rank_{-1};
  std::atomic<bool> disarmed_{false};
};

class DistributedEngine final : public train::TrainingEngine {
 public:
  DistributedEngine(const train::TrainOptions& options, std::shared_ptr<client::Client> client,
                    std::shared_ptr<FailureWatch> watch, const client::Assignment& assignment,
                    c10::Device device, c10::intrusive_ptr<c10d::Backend> backend)
      : options_(options),
        client_(std::move(client)),
        watch_(std::move(watch)),
        assignment_(assignment),
        device_(device),
        backend_(std::move(backend)) {
    if (options_.offload != "none" && options_.offload != "optimizer") {
      throw std::invalid_argument("--offload must be none or optimizer, got '" + options_.offload + "'");
    }
    if (options_.ddp_bucket_cap_mb <= 0) {
      throw std::invalid_argument("--ddp_bucket_cap_mb must be > 0, got " +
                                  std::to_string(options_.ddp_bucket_cap_mb));
    }
  }

  ~DistributedEngine() override {
    watch_->disarm();
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
    broadcast_from_rank0(parameters);
    std::vector<at::Tensor> tensors;
    for (const auto& p : parameters) tensors.push_back(p.tensor);
    buckets_ = std::make_unique<GradientBuckets>(
        tensors, backend_, static_cast<std::size_t>(options_.ddp_bucket_cap_mb) << 20);
    if (options_.offload == "optimizer") {
      for (bool decay : {true, false}) {
        for (std::size_t k = 0; k < parameters.size(); ++k) {
          if (parameters[k].decay == decay) norm_order_.push_back(k);
        }
      }
      std::vector<OffloadParameter> offloaded;
      for (const auto& p : parameters) offloaded.push_back({p.tensor, p.decay});
      offload_ = std::make_unique<OffloadAdamW>(
          std::move(offloaded), buckets_->slots(), backend_,
          optim::AdamWHyperparams{.lr = 0, .beta1 = settings.beta1, .beta2 = settings.beta2,
                                  .eps = settings.epsilon, .weight_decay = settings.weight_decay},
          optim::KernelOptions{.threads = static_cast<unsigned>(std::max<std::int64_t>(0, options_.threads))});
    } else {
      train::TrainOptions local = options_;
      local.use_cpu = !device_.is_cuda();
      replica_ = train::make_single_process_engine(local);
      replica_->attach(std::move(parameters), settings);
    }
  }

  void begin_micro_step(bool last_micro_step) override { buckets_->begin_micro_step(last_micro_step); }

  double finish_gradients(double max_norm) override {
    buckets_->finish();
    if (!offload_) {
      buckets_->copy_to_grads();
      return replica_->finish_gradients(max_norm);
    }
    // torch's clip_grad_norm_ as the one-process engine calls it: the norm of the per-parameter
    // norms (decayed group first), then scale by max_norm / (norm + 1e-6) when that is below 1.
    std::vector<at::Tensor> norms;
    for (std::size_t k : norm_order_) {
      const FlatSlot& slot = buckets_->slots()[k];
      norms.push_back(buckets_->flat().narrow(0, slot.offset, slot.numel).norm());
    }
    const double norm = at::stack(norms).norm().item<double>();
    grad_scale_ = 1.0;
    if (max_norm > 0 && std::isfinite(norm)) grad_scale_ = std::min(1.0, max_norm / (norm + 1e-6));
    return norm;
  }

  void optimizer_step(double learning_rate) override {
    if (!offload_) return replica_->optimizer_step(learning_rate);
    offload_->step(buckets_->flat(), learning_rate, grad_scale_);
    for (auto& p : attached_tensors()) p.mutable_grad().reset();
  }

  std::vector<double> all_reduce_sum(std::vector<double> values) override {
    if (values.empty()) return values;
    auto t = at::tensor(values, at::TensorOptions().dtype(at::kDouble)).to(device_);
    std::vector<at::Tensor> tensors{t};
    backend_->allreduce(tensors)->wait();
    t = t.to(at::kCPU);
    return {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()};
  }

  void barrier() override { backend_->barrier()->wait(); }

  TensorMap optimizer_state() const override {
    return offload_ ? offload_->state() : replica_->optimizer_state();
  }

  void load_optimizer_state(const TensorMap& state) override {
    offload_ ? offload_->load_state(state) : replica_->load_optimizer_state(state);
  }

 private:
  void broadcast_from_rank0(const std::vector<NamedParameter>& parameters) {
    at::NoGradGuard no_grad;
    for (const auto& p : parameters) {
      std::vector<at::Tensor> tensors{p.tensor.detach()};
      backend_->broadcast(tensors)->wait();
    }
    attached_.clear();
    for (const auto& p : parameters) attached_.push_back(p.tensor);
  }

  std::vector<at::Tensor>& attached_tensors() { return attached_; }

  train::TrainOptions options_;
  std::shared_ptr<client::Client> client_;
  std::shared_ptr<FailureWatch> watch_;
  client::Assignment assignment_;
  c10::Device device_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  std::vector<at::Tensor> attached_;
  std::vector<std::size_t> norm_order_;  // parameter indices in clip_grad_norm_'s order
  std::unique_ptr<GradientBuckets> buckets_;
  std::unique_ptr<OffloadAdamW> offload_;
  std::unique_ptr<train::TrainingEngine> replica_;
  double grad_scale_ = 1.0;
};

}  // namespace

bool rendezvous_env_present() {
  const char* endpoint = std::getenv("RDZV_ENDPOINT");
  return endpoint != nullptr && *endpoint != '\0';
}

std::unique_ptr<train::TrainingEngine> make_distributed_engine(const train::TrainOptions& options,
                                                               const ProcessGroupSettings& settings) {
  return make_distributed_engine(options, std::make_shared<client::Client>(client::Options::from_env()),
                                 settings);
}

std::unique_ptr<train::TrainingEngine> make_distributed_engine(const train::TrainOptions& options,
                                                               std::shared_ptr<client::Client> client,
                                                               const ProcessGroupSettings& settings) {
  auto watch = std::make_shared<FailureWatch>();
  const client::Assignment assignment =
      client->join([watch](const client::SessionEvent& event) { (*watch)(event); });
  watch->arm(assignment.rank);
  const bool cuda = !options.use_cpu && torch::cuda::is_available();
  const c10::Device device =
      cuda ? c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(std::max(0, assignment.local_rank)))
           : c10::Device(c10::kCPU);
  auto store = c10::make_intrusive<RdzvStore>(client, assignment.round, "pg/", settings.timeout);
  auto backend = make_process_group(store, assignment.rank, assignment.world_size, device, settings);
  return std::make_unique<DistributedEngine>(options, std::move(client), std::move(watch), assignment,
                                             device, std::move(backend));
}

}  // namespace llmrdzv::dist
