// ShardedStep: global-norm clipping over the shards, the shard-only AdamW step and its state.
#include "llmrdzv/dist/sharded_step.hpp"

#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

#include "llmrdzv/dist/shard_resharding.hpp"
#include "llmrdzv/engine/single_process_engine.hpp"

namespace llmrdzv::dist {

ShardedStep::ShardedStep(const std::vector<engine::NamedParameter>& parameters, const engine::AdamWSettings& settings,
                         const engine::EngineOptions& options, c10::intrusive_ptr<c10d::Backend> backend,
                         std::function<void()> before_failing, const engine::DeferredValues* deferred)
    : backend_(std::move(backend)),
      units_(std::make_unique<ShardedUnits>(parameters, backend_, std::move(before_failing), deferred)) {
  masters_.emplace(units_->shard_parameters());
  engine::EngineOptions local = options;
  local.shard_parameters = false;
  local.offload = engine::Offload::none;  // on the CPU the shards' state is in host memory already
  local.use_cpu = !parameters.front().tensor.is_cuda();
  optimizer_ = engine::make_single_process_engine(local);
  optimizer_->attach(masters_->masters(), settings);
}

void ShardedStep::begin_micro_step() {
  // After a save or an evaluation gathered the whole model: back to shards. Then any unit whose
  // gradient the last backward left partly unreduced is reduced now, before new gradients come.
  units_->release_all();
  units_->finish_backward();
}

engine::GradientNorm ShardedStep::finish_gradients(double max_norm, double gradient_multiplier) {
  units_->finish_backward();
  // torch's clip_grad_norm_ over the whole gradient: the squares of every rank's shard summed.
  at::Tensor square = at::full({1}, units_->local_gradient_square_sum(), at::TensorOptions().dtype(at::kDouble));
  if (backend_->getSize() > 1) {
    std::vector<at::Tensor> tensors{square};
    const auto start = std::chrono::steady_clock::now();
    backend_->allreduce(tensors)->wait();
    norm_wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const double norm = std::sqrt(square.item<double>()) * gradient_multiplier;
  double multiplier = gradient_multiplier;
  if (max_norm > 0 && std::isfinite(norm)) multiplier *= std::min(1.0, max_norm / (norm + 1e-6));
  const std::vector<at::Tensor> masters = masters_->master_tensors();
  const std::vector<at::Tensor>& gradients = units_->shard_gradients();
  for (std::size_t i = 0; i < masters.size(); ++i) masters[i].mutable_grad() = gradients[i];
  optimizer_->finish_gradients(0.0, multiplier);
  return engine::GradientNorm(norm);
}

void ShardedStep::optimizer_step(double learning_rate) {
  optimizer_->optimizer_step(learning_rate);
  masters_->write_back();  // bf16/fp16: the updated masters, rounded, into the shards the gathers read
  units_->zero_gradients();
}

void ShardedStep::skip_step() {
  optimizer_->skip_step();
  units_->zero_gradients();
}

engine::TensorMap ShardedStep::optimizer_state() const {
  engine::TensorMap state = optimizer_->optimizer_state();
  masters_->save(state);
  state[kShardParametersWorldEntry] = at::tensor(static_cast<std::int64_t>(backend_->getSize()), at::kLong);
  return state;
}

void ShardedStep::load_optimizer_state(const engine::TensorMap& saved) {
  // Saved by another number of ranks: every old rank's entries, cut again for this world size.
  engine::TensorMap state = saved.contains(kShardParametersOldWorldEntry)
                                ? reshard_shard_state(saved, units_->layout(), backend_->getRank(), backend_->getSize())
                                : saved;
  const auto world = state.find(kShardParametersWorldEntry);
  if (world == state.end()) {
    throw std::runtime_error("the checkpoint's optimizer state was saved without --shard_parameters: resume it without "
                             "the option, or start a sharded run from its model");
  }
  const std::int64_t saved_world = world->second.item<std::int64_t>();
  if (saved_world != backend_->getSize()) {
    throw std::runtime_error("the checkpoint's optimizer state is sharded over " + std::to_string(saved_world) +
                             " ranks and this run has " + std::to_string(backend_->getSize()) +
                             " (the other ranks' parts were not given to reshard it)");
  }
  state.erase(world);
  masters_->load(state);  // takes its entries out
  optimizer_->load_optimizer_state(state);
  if (masters_->copies()) masters_->write_back();
}

double ShardedStep::wait_seconds() const { return units_->wait_seconds() + norm_wait_seconds_; }

std::int64_t ShardedStep::optimizer_state_bytes() const {
  std::set<const c10::StorageImpl*> seen;
  std::int64_t bytes = 0;
  const auto add = [&](const at::Tensor& t) {
    if (t.defined() && seen.insert(t.storage().unsafeGetStorageImpl()).second) {
      bytes += static_cast<std::int64_t>(t.storage().nbytes());
    }
  };
  for (const auto& [name, tensor] : optimizer_->optimizer_state()) {
    if (!name.starts_with("step.")) add(tensor);  // the step counts are made for saving
  }
  if (masters_->copies()) {
    for (const at::Tensor& master : masters_->master_tensors()) add(master);
  }
  return bytes;
}

std::string ShardedStep::residency_report(int rank) const {
  const ShardResidency r = units_->residency();
  std::ostringstream out;
  out << "trainer: rank " << rank << ": --shard_parameters over " << backend_->getSize() << " ranks: " << r.shard_bytes
      << " bytes of parameter and gradient shards and " << optimizer_state_bytes()
      << " bytes of optimizer state held; at most " << r.peak_gathered_bytes
      << " bytes of whole-unit parameters and " << r.peak_gradient_bytes
      << " bytes of whole-unit gradients alive at once during training (the whole model: " << r.whole_model_bytes
      << " bytes; its largest unit " << r.largest_unit_bytes << ", unit 0 " << r.outer_unit_bytes << ")";
  return out.str();
}

}  // namespace llmrdzv::dist
