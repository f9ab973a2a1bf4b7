// make_trained_model: the whole-model path and ZeRO-3's deferred one (see trained_model.hpp).
#include "trained_model.hpp"

#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>

#include "device_traits.hpp"
#include "llmrdzv/io/hf_weights.hpp"
#include "llmrdzv/train/sharded_host_memory.hpp"

namespace llmrdzv::train {
namespace {

// Ranks on this node, as the launcher (srun --llm-rdzv, --nproc) tells each.
int node_ranks() {
  const char* value = std::getenv("LOCAL_WORLD_SIZE");
  const int ranks = value ? std::atoi(value) : 1;
  return ranks > 0 ? ranks : 1;
}

// Refuses a run this node's host memory cannot hold (sharded_host_memory.hpp); the log's line
// about it otherwise (none when /proc does not say what is available).
std::optional<std::string> plan_sharded_host_memory(const ShardedModelSize& size, ComputeDtype dtype, int world_size) {
  const std::optional<double> available = available_host_memory();
  if (!available) return std::nullopt;
  const int ranks = node_ranks();
  const ShardedHostNeed need = sharded_host_need(size, dtype, world_size, ranks);
  if (auto shortfall = sharded_host_shortfall(need, size, dtype, world_size, ranks, *available)) {
    throw std::invalid_argument(*shortfall);
  }
  return describe_sharded_host_need(need, dtype, world_size, ranks, *available);
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

TrainedModel make_whole(const TrainOptions& o, const ModelSource& source, const tokenizer::Tokenizer& tokenizer,
                        const VerifiedCheckpoint* resume, const Precision& precision, engine::TrainingEngine& engine) {
  model::CausalLm model = build_model(source, tokenizer);
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

TrainedModel make_sharded(const TrainOptions& o, const ModelSource& source, const tokenizer::Tokenizer& tokenizer,
                          const VerifiedCheckpoint* resume, const Precision& precision, engine::TrainingEngine& engine) {
  TrainedModel made{nullptr, {}};
  // Before anything is made, from the config: the units are not known yet, a block taken as the
  // model's share per layer (embeddings included), unit 0 as nothing beyond it.
  const model::ModelConfig config = model_config_of(source, tokenizer);
  const double count = model::parameter_count(config);
  plan_sharded_host_memory({count, 0, count / static_cast<double>(config.num_layers())}, precision.dtype,
                           engine.world_size());
  DeferredModel deferred = build_deferred_model(source, config);
  made.model = deferred.model;
  if (resume) {
    // Rank 0's values become every rank's; the RNG states come from the checkpoint afterwards.
    if (engine.is_main()) {
      auto weights = std::make_shared<io::HfWeights>(checkpoint_weights(*resume, made.model));
      deferred.values = [weights](const std::string& name, const at::Tensor& values) { weights->read(name, values); };
    } else {
      deferred.values = [](const std::string&, const at::Tensor&) {};
    }
  }
  std::vector<engine::NamedParameter> parameters = trainable_parameters(made.model);
  if (auto line = plan_sharded_host_memory(unit_sizes(parameters), precision.dtype, engine.world_size())) {
    made.log.push_back(*line);
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
                                const tokenizer::Tokenizer& tokenizer, const VerifiedCheckpoint* resume,
                                const Precision& precision, engine::TrainingEngine& engine) {
  TrainedModel made = options.shard_parameters ? make_sharded(options, source, tokenizer, resume, precision, engine)
                                               : make_whole(options, source, tokenizer, resume, precision, engine);
  made.model->set_activation_checkpointing(options.gradient_checkpointing);
  if (engine::ParameterUnits* units = engine.parameter_units()) {
    made.model->set_unit_hooks({[units](int u) { units->before_forward(u); }, [units](int u) { units->after_forward(u); },
                                [units](int u) { units->before_backward(u); }});
  }
  return made;
}

}  // namespace llmrdzv::train
