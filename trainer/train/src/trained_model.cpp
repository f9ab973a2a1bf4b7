// make_trained_model: the whole-model path and ZeRO-3's deferred one (see trained_model.hpp).
#include "trained_model.hpp"

#include <memory>
#include <optional>
#include <stdexcept>

#include "device_traits.hpp"
#include "host_allocator.hpp"
#include "llmrdzv/io/hf_weights.hpp"
#include "llmrdzv/train/sharded_host_memory.hpp"

namespace llmrdzv::train {
namespace {

// ZeRO-3's host memory plan against `available` (read once, before this rank made anything).
// Every rank takes part in the verdict, so that none goes on to fill units that a peer will
// never gather: the rank whose node is short says what it needs, the others that it was refused.
// The log's line when it fits (none when /proc does not say what is available).
std::optional<std::string> plan_host_memory(const ShardedModelSize& size, ComputeDtype dtype,
                                            const std::optional<double>& available, engine::TrainingEngine& engine) {
  const ShardedHostNeed need = sharded_host_need(size, dtype, engine.world_size(), ranks_on_this_node());
  const std::optional<std::string> shortfall = available ? sharded_host_shortfall(need, *available) : std::nullopt;
  const double refusing = engine.all_reduce_sum({shortfall ? 1.0 : 0.0}).front();
  if (shortfall) throw std::invalid_argument(*shortfall);
  if (refusing > 0) {
    throw std::invalid_argument("--shard_parameters: " + std::to_string(static_cast<int>(refusing)) +
                                " rank(s) found too little host memory on their node for this model (their logs say "
                                "how much it needs)");
  }
  if (!available) return std::nullopt;
  return describe_sharded_host_need(need, *available);
}

ShardedModelSize unit_sizes(const std::vector<engine::NamedParameter>& parameters) {
  ShardedModelSize size;
  std::vector<double> units;
  for (const auto& p : parameters) {
    const auto unit = static_cast<std::size_t>(p.unit);
    if (units.size() <= unit) units.resize(unit + 1, 0);
    units[unit] += static_cast<double>(p.tensor.numel());
    size.parameters += static_cast<double>(p.tensor.numel());
  }
  size.outer_unit = units.empty() ? 0 : units[0];
  for (std::size_t u = 1; u < units.size(); ++u) size.largest_block = std::max(size.largest_block, units[u]);
  return size;
}

engine::AdamWSettings adamw_settings(const TrainOptions& o) {
  return {o.adam_beta1, o.adam_beta2, o.adam_epsilon, o.weight_decay};
}

TrainedModel make_whole(const TrainOptions& o, const ModelSource& source, const model::ModelConfig& config,
                        const VerifiedCheckpoint* resume, const Precision& precision, engine::TrainingEngine& engine) {
  model::CausalLm model = build_model(source, config);
  if (resume && engine.is_main()) restore_model(*resume, model);
  std::int64_t parameter_count = 0;
  for (const auto& p : model->parameters()) parameter_count += p.numel();
  if (const auto shortfall = device_memory_shortfall(parameter_count, precision.dtype, o.offload == Offload::optimizer,
                                                     engine.world_size(), device_traits(engine.device()))) {
    throw std::runtime_error(*shortfall);
  }
  // In one move: a bf16 model never exists in fp32 on the GPU.
  model->to(engine.device(), scalar_type(precision.dtype));
  engine.attach(trainable_parameters(model), adamw_settings(o));
  return {model, {}};
}

TrainedModel make_sharded(const TrainOptions& o, const ModelSource& source, const model::ModelConfig& config,
                          const VerifiedCheckpoint* resume, const Precision& precision, engine::TrainingEngine& engine) {
  // Units' blocks come and go once each here: back to the kernel when freed, not kept in the heap.
  const LargeBlocksReturned returned;
  const std::optional<double> available = available_host_memory();
  // Before anything is made, from the config: the units are not known yet, a block taken as the
  // model's share per layer (embeddings included), unit 0 as nothing beyond it.
  const double count = model::parameter_count(config);
  plan_host_memory({count, 0, count / static_cast<double>(config.num_layers())}, precision.dtype, available, engine);
  DeferredModel deferred = build_deferred_model(source, config);
  TrainedModel made{deferred.model, {}};
  std::vector<engine::NamedParameter> parameters = trainable_parameters(made.model);
  if (auto line = plan_host_memory(unit_sizes(parameters), precision.dtype, available, engine)) {
    made.log.push_back(*line);
  }
  // Rank 0's values become every rank's. The other ranks draw HF's initialisation too, so that
  // their RNG goes on as a whole model's would; weights read from files they need not read.
  // Resumed, rank 0 reads the checkpoint's (the RNG states come from it afterwards).
  if (resume && engine.is_main()) {
    deferred.values = read_weights(std::make_shared<const io::HfWeights>(checkpoint_weights(*resume, made.model)));
  } else if (!engine.is_main() && (resume || !deferred.drawn)) {
    deferred.values = [](const std::string&, const at::Tensor&) {};
  }
  std::vector<std::string> names;
  for (const auto& p : parameters) names.push_back(p.name);
  const engine::DeferredValues values{
      [&](std::size_t index, const at::Tensor& out) { deferred.values(names.at(index), out); },
      scalar_type(precision.dtype)};
  engine.attach_deferred(std::move(parameters), adamw_settings(o), values);
  return made;
}

}  // namespace

TrainedModel make_trained_model(const TrainOptions& options, const ModelSource& source,
                                const model::ModelConfig& config, const VerifiedCheckpoint* resume,
                                const Precision& precision, engine::TrainingEngine& engine) {
  TrainedModel made = options.shard_parameters ? make_sharded(options, source, config, resume, precision, engine)
                                               : make_whole(options, source, config, resume, precision, engine);
  made.model->set_activation_checkpointing(options.gradient_checkpointing);
  if (engine::ParameterUnits* units = engine.parameter_units()) {
    made.model->set_unit_hooks({[units](int u) { units->before_forward(u); }, [units](int u) { units->after_forward(u); },
                                [units](int u) { units->before_backward(u); }});
  }
  return made;
}

}  // namespace llmrdzv::train
