// The TrainingEngine of a run with one process: no synchronisation, the optimizer on its device.
// `trainer` uses it when no rendezvous is named; the distributed engine (trainer/dist) steps one
// of them on every rank when the optimizer is not offloaded.
#pragma once

#include <memory>

#include "llmrdzv/engine/engine_options.hpp"
#include "llmrdzv/engine/training_engine.hpp"

namespace llmrdzv::engine {

// One process, on CUDA when available and not options.use_cpu (torch::optim::AdamW), else on the
// CPU (the fused llmrdzv::optim AdamW); no decay for NamedParameter::decay == false. Throws
// std::invalid_argument for --offload optimizer, which needs the distributed engine.
std::unique_ptr<TrainingEngine> make_single_process_engine(const EngineOptions& options);

}  // namespace llmrdzv::engine
