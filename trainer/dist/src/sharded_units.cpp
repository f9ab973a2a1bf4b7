// ShardedUnits: the unit layout, the storage swaps that free and restore a unit's parameters, the
// gathers with their prefetch, and the gradient reduce-scatter from autograd's hooks (see
// sharded_units.hpp).
#include "llmrdzv/dist/sharded_units.hpp"

#include <ATen/ATen.h>
#include <c10/core/StorageImpl.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

#include "llmrdzv/kernel_support/tensor_storage.hpp"

namespace llmrdzv::dist {
namespace {

class GradientHook final : public torch::autograd::PostAccumulateGradHook {
 public:
  GradientHook(ShardedUnits& owner, std::size_t index) : owner_(owner), index_(index) {}
  void operator()(const torch::autograd::Variable&) override { owner_.on_gradient(index_); }

 private:
  ShardedUnits& owner_;
  std::size_t index_;
};

std::int64_t storage_bytes(const at::Tensor& t) { return static_cast<std::int64_t>(t.storage().nbytes()); }

}  // namespace

std::string shard_part_name(int unit, bool decay) {
  return "unit" + std::to_string(unit) + (decay ? ".decay" : ".no_decay");
}

PiecePlace shard_piece(std::int64_t lo, std::int64_t hi, std::int64_t shard, std::int64_t rank) {
  const std::int64_t from = std::max(rank * shard, lo), to = std::min((rank + 1) * shard, hi);
  return to > from ? PiecePlace{from, to} : PiecePlace{from, from};
}

ShardedUnits::ShardedUnits(const std::vector<engine::NamedParameter>& parameters,
                           c10::intrusive_ptr<c10d::Backend> backend, std::function<void()> before_failing,
                           const engine::DeferredValues* deferred)
    : backend_(std::move(backend)),
      before_failing_(std::move(before_failing)),
      rank_(backend_->getRank()),
      world_(backend_->getSize()) {
  if (parameters.empty()) throw std::invalid_argument("--shard_parameters: the model has no trainable parameters");
  const at::TensorOptions options = parameters.front().tensor.options().requires_grad(false).dtype(
      deferred ? deferred->dtype : parameters.front().tensor.scalar_type());
  int last_unit = 0;
  for (const auto& p : parameters) {
    if (p.tensor.scalar_type() != parameters.front().tensor.scalar_type() || p.tensor.device() != options.device()) {
      throw std::invalid_argument("--shard_parameters: every parameter must have one dtype and device ('" + p.name +
                                  "' differs)");
    }
    if (p.unit < 0) throw std::invalid_argument("--shard_parameters: parameter '" + p.name + "' has no unit");
    last_unit = std::max(last_unit, p.unit);
  }
  units_.resize(static_cast<std::size_t>(last_unit) + 1);
  for (const bool decay : {true, false}) {
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      if (parameters[i].decay == decay) units_[static_cast<std::size_t>(parameters[i].unit)].members.push_back(i);
    }
  }
  for (std::size_t u = 0; u < units_.size(); ++u) {
    if (units_[u].members.empty()) {
      throw std::invalid_argument("--shard_parameters: unit " + std::to_string(u) + " has no parameters");
    }
  }

  at::NoGradGuard no_grad;
  parameters_.reserve(parameters.size());
  for (const auto& p : parameters) parameters_.push_back(p.tensor);
  unit_of_.resize(parameters.size());
  offset_of_.resize(parameters.size());
  const auto element = static_cast<std::int64_t>(c10::elementSize(options.dtype().toScalarType()));
  for (std::size_t u = 0; u < units_.size(); ++u) {
    Unit& unit = units_[u];
    for (std::size_t m : unit.members) {
      unit_of_[m] = u;
      unit.numel += parameters_[m].numel();
      if (parameters[m].decay) unit.decay_numel += parameters_[m].numel();
    }
    unit.shard = shard_numel(unit.numel, world_);
    unit.whole = deferred ? at::empty({unit.shard * world_}, options) : at::zeros({unit.shard * world_}, options);
    std::int64_t offset = 0;
    for (std::size_t m : unit.members) {
      at::Tensor& p = parameters_[m];
      at::Tensor slot = unit.whole.narrow(0, offset, p.numel()).view(p.sizes());
      if (!deferred) slot.copy_(p);
      p.set_data(slot);
      offset_of_[m] = offset;
      offset += p.numel();
    }
    unit.local = deferred ? at::zeros({unit.shard}, options) : unit.whole.narrow(0, rank_ * unit.shard, unit.shard).clone();
    unit.gradient = at::empty({unit.shard * world_}, options.dtype(at::kFloat));
    kernel_support::release_storage(unit.gradient);
    unit_gradients_.push_back(at::zeros({unit.shard}, options.dtype(at::kFloat)));
    // This rank's shard of the unit, split where the decayed parameters end (the padding past
    // numel belongs to neither part and stays zero).
    const std::int64_t a = rank_ * unit.shard;
    const auto add_part = [&](std::int64_t lo, std::int64_t hi, bool decay) {
      const PiecePlace piece = shard_piece(lo, hi, unit.shard, rank_);
      if (piece.to == piece.from) return;
      shard_parameters_.push_back({shard_part_name(static_cast<int>(u), decay),
                                   unit.local.narrow(0, piece.from - a, piece.to - piece.from), decay,
                                   static_cast<int>(u)});
      shard_gradients_.push_back(unit_gradients_.back().narrow(0, piece.from - a, piece.to - piece.from));
    };
    add_part(0, unit.decay_numel, true);
    add_part(unit.decay_numel, unit.numel, false);
    kernel_support::release_storage(unit.whole);  // (never allocated when deferred: nothing to keep)
    residency_.whole_model_bytes += unit.numel * element;
    residency_.largest_unit_bytes = std::max(residency_.largest_unit_bytes, unit.numel * element);
    residency_.shard_bytes += storage_bytes(unit.local) + storage_bytes(unit_gradients_.back());
  }
  residency_.outer_unit_bytes = units_[0].numel * element;
  if (deferred) fill_deferred(deferred->fill);
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    arrival_hooks_.push_back(parameters_[i].register_hook([this, i](const at::Tensor& g) {
      if (g.defined()) on_gradient_arriving(i);
    }));
    torch::autograd::impl::set_post_acc_grad_hooks(parameters_[i], std::make_unique<GradientHook>(*this, i));
  }
}

void ShardedUnits::fill_deferred(const std::function<void(std::size_t, const at::Tensor&)>& fill) {
  // In model order, as the values are drawn: unit 0 (embeddings first, final norm and head last)
  // stays from its first parameter to its last, each block only while its own are filled.
  std::vector<std::size_t> filled(units_.size(), 0);
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Unit& unit = units_[unit_of_[i]];
    if (filled[unit_of_[i]] == 0) {
      parameter_buffers_.take(unit.whole);
      unit.whole.zero_();  // the padding past numel stays zero in every shard
      note_gathered();
    }
    const at::Tensor values = at::empty(parameters_[i].sizes(), at::TensorOptions().dtype(at::kFloat));
    fill(i, values);
    parameters_[i].detach().copy_(values);
    if (++filled[unit_of_[i]] < unit.members.size()) continue;
    if (world_ > 1) {  // rank 0's values, as bytes (any dtype)
      std::vector<at::Tensor> bytes{unit.whole.view(at::kByte)};
      wait(guarded([&] { return backend_->broadcast(bytes); }));
    }
    unit.local.copy_(unit.whole.narrow(0, rank_ * unit.shard, unit.shard));
    parameter_buffers_.keep(unit.whole);
    note_gathered();
  }
}

ShardedUnits::~ShardedUnits() {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    parameters_[i].remove_hook(arrival_hooks_[i]);
    torch::autograd::impl::set_post_acc_grad_hooks(parameters_[i], nullptr);
  }
  for (auto& unit : units_) {
    for (const auto& work : {unit.pending, unit.reducing}) {
      if (!work) continue;
      try {
        work->wait();
      } catch (const std::exception&) {
        // The group is failing; the buffers the collective used go with this object.
      }
    }
  }
}

template <class F>
auto ShardedUnits::guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception&) {
    if (before_failing_) before_failing_();
    throw;
  }
}

void ShardedUnits::wait(const c10::intrusive_ptr<c10d::Work>& work) {
  const auto start = std::chrono::steady_clock::now();
  guarded([&] { work->wait(); });
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void ShardedUnits::note_gathered() {
  std::int64_t alive = 0;
  for (const auto& unit : units_) alive += storage_bytes(unit.whole);
  residency_.gathered_bytes = alive + parameter_buffers_.kept_bytes();
  if (!all_gathered_) residency_.peak_gathered_bytes = std::max(residency_.peak_gathered_bytes, residency_.gathered_bytes);
}

void ShardedUnits::note_gradients() {
  std::int64_t alive = gradient_buffers_.kept_bytes();
  for (const auto& unit : units_) alive += storage_bytes(unit.gradient);
  residency_.peak_gradient_bytes = std::max(residency_.peak_gradient_bytes, alive);
}

void ShardedUnits::start_gather(Unit& unit) {
  parameter_buffers_.take(unit.whole);
  note_gathered();
  if (world_ == 1) {
    unit.whole.copy_(unit.local);
    unit.state = State::gathered;
    return;
  }
  // As bytes: the same for every dtype, bf16 included.
  at::Tensor out = unit.whole.view(at::kByte);
  at::Tensor in = unit.local.view(at::kByte);
  unit.pending = guarded([&] { return backend_->_allgather_base(out, in); });
  unit.state = State::gathering;
}

void ShardedUnits::wait_gathered(Unit& unit) {
  if (unit.state == State::released) start_gather(unit);
  if (unit.state == State::gathering) {
    wait(unit.pending);
    unit.pending.reset();
    unit.state = State::gathered;
  }
}

void ShardedUnits::release(Unit& unit) {
  if (all_gathered_) return;
  free_unit(unit);
  note_gathered();
}

void ShardedUnits::free_unit(Unit& unit) {
  if (unit.state == State::released) return;
  wait_gathered(unit);  // a gather in flight writes into the buffer: let it land first
  parameter_buffers_.keep(unit.whole);
  unit.state = State::released;
}

void ShardedUnits::before_forward(int unit) {
  if (read_unit_) release(units_[*std::exchange(read_unit_, std::nullopt)]);  // a read's last unit
  if (all_gathered_ || !in_range(unit)) return;
  wait_gathered(units_[static_cast<std::size_t>(unit)]);
  // The next block's gather runs while this unit computes.
  const std::size_t next = static_cast<std::size_t>(unit) + 1;
  if (next < units_.size() && units_[next].state == State::released) start_gather(units_[next]);
}

void ShardedUnits::after_forward(int unit) {
  if (all_gathered_ || !in_range(unit)) return;
  // Unit 0 (embeddings, final norm, LM head) is the first to run backward, and the tied head is
  // the embedding: in training it stays until its gradient has been reduced.
  if (unit == 0 && at::GradMode::is_enabled()) return;
  release(units_[static_cast<std::size_t>(unit)]);
}

void ShardedUnits::before_backward(int unit) {
  if (all_gathered_ || !in_range(unit)) return;
  wait_gathered(units_[static_cast<std::size_t>(unit)]);
  if (unit > 1 && units_[static_cast<std::size_t>(unit) - 1].state == State::released) {
    start_gather(units_[static_cast<std::size_t>(unit) - 1]);
  }
}

void ShardedUnits::on_gradient_arriving(std::size_t index) {
  Unit& unit = units_[unit_of_[index]];
  if (unit.gradients_seen > 0) return;
  if (reducing_ == unit_of_[index]) finish_reduction();  // its last gradient's buffer
  // The unit's first gradient: every member's .grad becomes its place in the zeroed flat buffer,
  // so autograd adds into it (a bf16/fp16 gradient widened on the way, exactly) and the
  // reduction reads it as it is. (A buffer with no gradient counted yet holds nothing that came
  // after the last reduction: zeroed again.)
  at::NoGradGuard no_grad;
  gradient_buffers_.take(unit.gradient);
  unit.gradient.zero_();  // the padding past numel too: it is reduced with the rest
  for (std::size_t m : unit.members) parameters_[m].mutable_grad() = gradient_place(m);
  note_gradients();
}

at::Tensor ShardedUnits::gradient_place(std::size_t index) const {
  const at::Tensor& p = parameters_[index];
  return units_[unit_of_[index]].gradient.narrow(0, offset_of_[index], p.numel()).view(p.sizes());
}

void ShardedUnits::on_gradient(std::size_t index) {
  Unit& unit = units_[unit_of_[index]];
  at::Tensor& p = parameters_[index];
  if (p.grad().defined() && !p.grad().is_alias_of(unit.gradient)) {
    // Autograd put a new tensor in .grad instead of adding into the buffer (it does so when asked
    // for a graph of the backward: the old .grad, the buffer's place, plus the new gradient):
    // copied into its place, so none is lost.
    at::NoGradGuard no_grad;
    at::Tensor place = gradient_place(index);
    place.copy_(p.grad().is_sparse() ? p.grad().to_dense() : p.grad());
    p.mutable_grad() = place;
  }
  if (++unit.gradients_seen == unit.members.size()) reduce(unit);
}

void ShardedUnits::reduce(Unit& unit) {
  at::NoGradGuard no_grad;
  unit.gradients_seen = 0;
  for (std::size_t m : unit.members) parameters_[m].mutable_grad().reset();
  finish_reduction();  // the one before: one in flight at a time, in the same order on every rank
  if (world_ > 1) {
    // An all-reduce in place, of which this rank keeps its shard: Gloo's reduce-scatter is that
    // same all-reduce run on a copy of the whole buffer (a unit-sized allocation per reduction).
    // A device backend's real reduce-scatter would move 1/N of the result instead.
    unit.gradient.div_(world_);  // reductions sum; dividing first gives the mean, as the data-parallel buckets do
    std::vector<at::Tensor> tensors{unit.gradient};
    unit.reducing = guarded([&] { return backend_->allreduce(tensors); });
  }
  reducing_ = static_cast<std::size_t>(&unit - units_.data());
  release(unit);
}

void ShardedUnits::finish_reduction() {
  if (!reducing_) return;
  const std::size_t u = *std::exchange(reducing_, std::nullopt);
  Unit& unit = units_[u];
  if (unit.reducing) wait(std::exchange(unit.reducing, {}));
  at::NoGradGuard no_grad;
  unit_gradients_[u].add_(unit.gradient.narrow(0, rank_ * unit.shard, unit.shard));
  gradient_buffers_.keep(unit.gradient);
}

void ShardedUnits::finish_backward() {
  for (auto& unit : units_) {
    if (unit.gradients_seen > 0) reduce(unit);
  }
  finish_reduction();
  for (auto& unit : units_) release(unit);
}

double ShardedUnits::local_gradient_square_sum() const {
  double sum = 0;
  for (const auto& g : unit_gradients_) {
    const at::Tensor wide = g.to(at::kDouble);
    sum += at::dot(wide, wide).item<double>();
  }
  return sum;
}

void ShardedUnits::zero_gradients() {
  for (auto& g : unit_gradients_) g.zero_();
}

void ShardedUnits::gather_whole() {
  if (all_gathered_) return;
  read_unit_.reset();
  all_gathered_ = true;  // first: the whole model gathered for loading is not a peak of training
  for (auto& unit : units_) {
    if (unit.state == State::released) start_gather(unit);
  }
  for (auto& unit : units_) wait_gathered(unit);
  note_gathered();
}

void ShardedUnits::release_all() {
  for (auto& unit : units_) free_unit(unit);
  all_gathered_ = false;
  read_unit_.reset();
  note_gathered();
}

void ShardedUnits::adopt_whole() {
  at::NoGradGuard no_grad;
  for (auto& unit : units_) {
    wait_gathered(unit);
    unit.local.copy_(unit.whole.narrow(0, rank_ * unit.shard, unit.shard));
  }
}

void ShardedUnits::read_unit_of(const at::Tensor& parameter) {
  const c10::StorageImpl* storage = parameter.storage().unsafeGetStorageImpl();
  const auto found = std::find_if(units_.begin(), units_.end(), [&](const Unit& unit) {
    return unit.whole.storage().unsafeGetStorageImpl() == storage;
  });
  if (found == units_.end()) {
    throw std::invalid_argument("--shard_parameters: a tensor read that is no parameter of the sharded model");
  }
  const std::size_t u = static_cast<std::size_t>(found - units_.begin());
  if (all_gathered_) {
    adopt_whole();
    release_all();
  }
  if (read_unit_ == u) return;
  if (read_unit_) release(units_[*read_unit_]);
  wait_gathered(units_[u]);
  read_unit_ = u;
}

std::vector<UnitLayout> ShardedUnits::layout() const {
  std::vector<UnitLayout> layout;
  for (const auto& unit : units_) layout.push_back({unit.numel, unit.decay_numel});
  return layout;
}

ShardResidency ShardedUnits::residency() const { return residency_; }

void ShardedUnits::reset_peaks() {
  residency_.peak_gathered_bytes = residency_.gathered_bytes;
  residency_.peak_gradient_bytes = 0;
}

}  // namespace llmrdzv::dist
