// The training run of train_loop.hpp. Every rank runs this; work that must happen once (output
// directory, logging, metrics, export) is rank 0's, and every cross-rank step goes through the
// TrainingEngine so the loop is the same for one process and for many.
#include "llmrdzv/train/train_loop.hpp"

#include <torch/utils.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <numbers>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "checkpoint_state.hpp"
#include "device_traits.hpp"
#include "host_allocator.hpp"
#include "llmrdzv/io/atomic_file.hpp"
#include "llmrdzv/io/checkpoint_name.hpp"
#include "llmrdzv/io/hf_model_dir.hpp"
#include "llmrdzv/model/cpu_gemm.hpp"
#include "llmrdzv/model/cuda_kernels_status.hpp"
#include "llmrdzv/tensorboard/event_writer.hpp"
#include "llmrdzv/train/cli.hpp"
#include "llmrdzv/train/lr_schedule.hpp"
#include "llmrdzv/train/metrics_log.hpp"
#include "llmrdzv/train/progress.hpp"
#include "model_setup.hpp"
#include "step_profiler.hpp"
#include "trained_model.hpp"
#include "training_data.hpp"

namespace llmrdzv::train {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::uint64_t resolve_block_size(const TrainOptions& o, const model::ModelConfig& config) {
  const std::int64_t positions = config.max_positions();
  if (o.block_size == 0) return static_cast<std::uint64_t>(std::min<std::int64_t>(positions, 1024));
  if (o.block_size > positions) {
    throw std::invalid_argument("--block_size " + std::to_string(o.block_size) + " exceeds the model's " +
                                std::to_string(positions) + " positions");
  }
  return static_cast<std::uint64_t>(o.block_size);
}

// Rank 0: refuse to mix a new run into an old one unless asked. Returns what --overwrite_output_dir
// will clear of the old run (its checkpoints, logs and model; not the token cache, which is keyed
// by its inputs). Nothing is removed here: the new run clears it only once its model, tokenizer
// and data have loaded (the model may be the old run's own), just before it writes anything.
std::vector<fs::path> previous_run(const TrainOptions& o) {
  const fs::path dir(o.output_dir);
  fs::create_directories(dir);
  if (!o.do_train || !o.resume_from_checkpoint.empty()) return {};
  std::vector<fs::path> previous;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    // An empty metrics.jsonl is left by a run that failed before its first record.
    if (name == "metrics.jsonl" && entry.is_regular_file() && entry.file_size() == 0) continue;
    if (io::parse_checkpoint_step(name) || name.starts_with("rank-") || name == "metrics.jsonl" ||
        name == "all_results.json" || name == "train_results.json" || name == "eval_results.json" ||
        io::is_weight_file_name(name)) {
      previous.push_back(entry.path());
    }
  }
  if (!previous.empty() && !o.overwrite_output_dir) {
    throw std::invalid_argument("output_dir '" + o.output_dir + "' already holds a training run (" +
                                previous.front().filename().string() +
                                "); pass --overwrite_output_dir to replace it or --resume_from_checkpoint latest to continue it");
  }
  return previous;
}

// Opens data on rank 0 first (it builds the token cache), then on the others (they reuse it).
template <class Open>
auto open_in_rank_order(engine::TrainingEngine& engine, Open open) {
  decltype(open()) opened;
  if (engine.is_main()) opened = open();
  engine.barrier();
  if (!engine.is_main()) opened = open();
  return opened;
}

// An evaluation's figures: the mean loss per predicted token (nats), and the same in bits per byte
// of the text those tokens stand for, which compares runs whose tokenizers differ.
struct Evaluation {
  double loss = 0;
  double bits_per_byte = 0;
};

// Each id's bytes of text (Tokenizer::text_bytes), for bits per byte.
std::vector<std::uint32_t> text_bytes_by_id(const tokenizer::Tokenizer& tokenizer) {
  std::vector<std::uint32_t> bytes(tokenizer.vocab_size());
  for (std::size_t id = 0; id < bytes.size(); ++id) {
    bytes[id] = static_cast<std::uint32_t>(tokenizer.text_bytes(static_cast<tokenizer::TokenId>(id)));
  }
  return bytes;
}

// Every validation block, each rank evaluating its contiguous share. A block of T tokens predicts
// its last T - 1, whose bytes of text bits per byte divides the summed loss by.
Evaluation evaluate(model::CausalLm& model, const EvalBlocks& blocks, engine::TrainingEngine& engine,
                    std::uint64_t batch_size, std::span<const std::uint32_t> text_bytes) {
  model->eval();
  torch::NoGradGuard no_grad;
  const data::BlockRange range = data::eval_shard(blocks.count(), static_cast<std::uint64_t>(engine.rank()),
                                                  static_cast<std::uint64_t>(engine.world_size()));
  double loss_sum = 0;  // of the blocks' mean losses
  double count = 0;
  double predicted = 0;  // tokens
  double bytes = 0;
  // With parameters sharded each forward is collective (every unit is gathered from all ranks): a
  // rank with fewer blocks runs as many batches as the one with the most, the extra ones on one
  // block whose loss it does not count.
  const auto batches_of = [&](const data::BlockRange& r) { return (r.end - r.begin + batch_size - 1) / batch_size; };
  std::uint64_t batches = batches_of(range);
  if (engine.parameter_units()) {
    for (int r = 0; r < engine.world_size(); ++r) {
      batches = std::max(batches, batches_of(data::eval_shard(blocks.count(), static_cast<std::uint64_t>(r),
                                                              static_cast<std::uint64_t>(engine.world_size()))));
    }
  }
  for (std::uint64_t batch = 0; batch < batches; ++batch) {
    const std::uint64_t first = range.begin + batch * batch_size;
    if (first >= range.end) {
      const at::Tensor ids = blocks.read(0, 1).to(engine.device());
      model->loss(ids, ids);
      continue;
    }
    const std::uint64_t n = std::min(batch_size, range.end - first);
    const at::Tensor block_ids = blocks.read(first, n);
    const auto columns = block_ids.size(1);
    const std::int64_t* row = block_ids.data_ptr<std::int64_t>();
    for (std::uint64_t b = 0; b < n; ++b, row += columns) {
      for (std::int64_t t = 1; t < columns; ++t) bytes += text_bytes[static_cast<std::size_t>(row[t])];
    }
    predicted += static_cast<double>(n) * static_cast<double>(columns - 1);
    const at::Tensor ids = block_ids.to(engine.device());
    loss_sum += model->loss(ids, ids).item<double>() * static_cast<double>(n);
    count += static_cast<double>(n);
  }
  const std::vector<double> totals = engine.all_reduce_sum({loss_sum, count, predicted, bytes});
  model->train();
  const double loss = totals[0] / totals[1];
  // Every block predicts the same number of tokens, so the mean of block means is the token mean.
  return {loss, totals[3] > 0 ? loss * totals[2] / (totals[3] * std::numbers::ln2) : NAN};
}

// TensorBoard's directory: --logging_dir, else the one of the run being resumed when its
// checkpoint is in this output_dir (a run resumed into another output_dir is a run of its own and
// leaves the original's curves alone), else transformers' default
// <output_dir>/runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname>. `recorded` is what the checkpoint says
// (recorded_logging_dir's form), so an output_dir moved or copied elsewhere takes its runs along.
// Whether the run continues the one whose checkpoint it resumes, in that run's own output_dir.
bool resumes_in_place(const TrainOptions& o, const std::optional<VerifiedCheckpoint>& resume) {
  return resume && fs::weakly_canonical(resume->dir).parent_path() == fs::weakly_canonical(o.output_dir);
}

fs::path resolve_logging_dir(const TrainOptions& o, const std::optional<VerifiedCheckpoint>& resume,
                             const std::string& recorded) {
  if (!o.logging_dir.empty()) return fs::absolute(o.logging_dir);
  if (!recorded.empty() && resumes_in_place(o, resume)) {
    return fs::absolute(fs::path(o.output_dir) / recorded);  // an absolute `recorded` stays as it is
  }
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%b%d_%H-%M-%S", &local);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "localhost");
  return fs::absolute(fs::path(o.output_dir) / "runs" / (std::string(stamp) + "_" + host));
}

// What checkpoints record of the logging directory: relative to output_dir when inside it.
std::string recorded_logging_dir(const TrainOptions& o, const fs::path& logging_dir) {
  const fs::path relative = logging_dir.lexically_normal().lexically_relative(fs::absolute(o.output_dir).lexically_normal());
  const bool inside = !relative.empty() && *relative.begin() != "..";
  return (inside ? relative : logging_dir).string();
}

// Rank 0's outputs: the progress line, metrics.jsonl and TensorBoard's event file. A training run
// that continues its own (`in_place`: resumed from a checkpoint of this output_dir) cuts
// metrics.jsonl back to `step`, whose later records it logs again; any other run only appends.
struct Reporter {
  Reporter(const TrainOptions& o, bool main, const fs::path& logging_dir, std::int64_t step, bool resumed, bool in_place)
      : main(main), progress(stdout, main && is_terminal(stdout)) {
    if (!main) return;
    metrics.emplace((fs::path(o.output_dir) / "metrics.jsonl").string(),
                    o.do_train && in_place ? std::optional(step) : std::nullopt);
    if (o.report_to == "none") return;
    tensorboard.emplace(logging_dir, resumed ? std::optional(step) : std::nullopt);
    tensorboard->text(step, "args", "```yaml\n" + options_yaml(o) + "```");
  }
  // Where the TensorBoard events go, and what a resume did to the logs already there.
  void announce_logs(std::int64_t step) {
    if (metrics && metrics->removed_lines() > 0) {
      message("metrics.jsonl: removed " + std::to_string(metrics->removed_lines()) + " lines after step " +
              std::to_string(step) + " (the earlier run's, logged again from here)");
    }
    if (!tensorboard) return;
    message("TensorBoard: " + tensorboard->path().string());
    for (const tensorboard::TrimmedFile& file : tensorboard->trimmed()) {
      if (file.left_alone) {
        message("TensorBoard: left " + file.path.string() + " as it is (" + file.damage +
                "): its events after step " + std::to_string(step) + " may show twice");
      } else {
        message("TensorBoard: removed " + std::to_string(file.events_removed) + " events after step " +
                std::to_string(step) + (file.damage.empty() ? "" : " and a torn last record") + " from " + file.path.string());
      }
    }
  }
  void message(const std::string& text) {
    if (main) progress.message(text);
  }
  void record(const json::Object& object) {
    if (main) metrics->write(object);
  }
  void scalars(std::int64_t step, const std::vector<tensorboard::Scalar>& values) {
    if (tensorboard) tensorboard->scalars(step, values);
  }

  bool main;
  ProgressDisplay progress;
  std::optional<MetricsLog> metrics;
  std::optional<tensorboard::EventWriter> tensorboard;
};

struct TrainContext {
  const TrainOptions& o;
  const tokenizer::Tokenizer& tokenizer;
  engine::TrainingEngine& engine;
  model::CausalLm& model;
  const EvalBlocks* eval_blocks;
  std::span<const std::uint32_t> text_bytes;  // by token id, for bits per byte
  Reporter& reporter;
  const Precision& precision;
};

// The validation blocks' evaluation of the model as it is now.
Evaluation evaluate(TrainContext& c) {
  return evaluate(c.model, *c.eval_blocks, c.engine, static_cast<std::uint64_t>(c.o.per_device_eval_batch_size), c.text_bytes);
}

// The latest evaluation and the step it was made at.
using LastEvaluation = std::optional<std::pair<std::int64_t, Evaluation>>;

void record_eval(TrainContext& c, std::int64_t step, const Evaluation& e) {
  const double loss = e.loss;
  c.reporter.record({{"step", step}, {"eval_loss", metric(loss)}, {"perplexity", metric(std::exp(loss))},
                     {"bits_per_byte", metric(e.bits_per_byte)}});
  c.reporter.scalars(step, {{"eval/loss", loss}, {"eval/perplexity", std::exp(loss)}, {"eval/bits_per_byte", e.bits_per_byte}});
  char text[96];
  std::snprintf(text, sizeof text, "step %lld: eval_loss %.4f, perplexity %.2f, %.4f bits per byte",
                static_cast<long long>(step), loss, std::exp(loss), e.bits_per_byte);
  c.reporter.message(text);
}

void save(TrainContext& c, LoopState& state, const TrainBatches& batches) {
  c.engine.complete_updates();
  state.data_state = batches.state();
  const fs::path dir = save_training_checkpoint(c.o.output_dir, c.model, c.engine, state, &c.tokenizer);
  c.engine.barrier();  // every rank's part is complete: older checkpoints may go
  prune_training_checkpoints(c.o.output_dir, c.engine.rank(), c.o.save_total_limit, state.global_step,
                             c.o.load_best_model_at_end ? state.best_step : 0);
  c.reporter.message("saved " + dir.string());
}

// --metric_for_best_model's value in an evaluation.
double best_model_metric(const TrainOptions& o, const Evaluation& e) {
  const std::string_view name = o.metric_for_best_model;
  if (name.ends_with("perplexity")) return std::exp(e.loss);
  if (name.ends_with("bits_per_byte")) return e.bits_per_byte;
  return e.loss;
}

// An evaluation during training at state.global_step: recorded, ranked by --metric_for_best_model
// as transformers' _determine_best_metric ranks it, and saved as a checkpoint when it is a new
// best under --save_strategy best. The evaluation is remembered so that the final one of a run
// that ends on it is not computed twice.
void evaluate_during_training(TrainContext& c, LoopState& state, const TrainBatches& batches, LastEvaluation& last_eval) {
  c.engine.complete_updates();
  const Evaluation evaluation = evaluate(c);
  record_eval(c, state.global_step, evaluation);
  last_eval.emplace(state.global_step, evaluation);
  if (c.o.metric_for_best_model.empty()) return;
  const double value = best_model_metric(c.o, evaluation);
  const bool better = !state.best_metric || (c.o.greater_is_better.value_or(false) ? value > *state.best_metric
                                                                                    : value < *state.best_metric);
  if (!better) return;
  state.best_metric = value;
  if (c.o.save_strategy != SaveStrategy::no) state.best_step = state.global_step;
  if (c.o.save_strategy == SaveStrategy::best) save(c, state, batches);
}

data::BatchShape batch_shape(const TrainOptions& o, const engine::TrainingEngine& engine) {
  return {static_cast<std::uint64_t>(o.per_device_train_batch_size), static_cast<std::uint64_t>(engine.world_size()),
          static_cast<std::uint64_t>(o.gradient_accumulation_steps)};
}

// The step loop over `batches`, which are restored to the resumed state here.
void train(TrainContext& c, std::unique_ptr<TrainBatches> batches, std::uint64_t block_size, LoopState& state,
           TrainSummary& summary, LastEvaluation& last_eval) {
  const TrainOptions& o = c.o;
  const data::BatchShape shape = batch_shape(o, c.engine);
  if (state.global_step > 0) batches->restore(state.data_state);
  const std::optional<std::uint64_t> steps_per_epoch = batches->steps_per_epoch();
  const std::int64_t total_steps =
      o.max_steps > 0 ? o.max_steps
                      : std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(o.num_train_epochs * static_cast<double>(*steps_per_epoch))));
  const LrSchedule schedule{o.lr_scheduler_type, o.learning_rate,
                            resolve_warmup_steps(o.warmup_steps, o.warmup_ratio, total_steps), total_steps,
                            o.deepspeed_schedule};
  // Training checkpoints: periodic as the strategy says, and at the end unless it says no (or best:
  // those come with evaluations).
  const auto checkpoint_due = [&](std::int64_t step) {
    switch (o.save_strategy) {
      case SaveStrategy::no:
      case SaveStrategy::best: return false;
      case SaveStrategy::steps: return step == total_steps || (o.save_steps > 0 && step % o.save_steps == 0);
      case SaveStrategy::epoch:
        return step == total_steps || step % static_cast<std::int64_t>(steps_per_epoch.value()) == 0;  // not streaming (cli.cpp)
    }
    return false;
  };
  // Evaluations during training, as --eval_strategy says (the final one of --do_eval comes after).
  const EvalStrategy eval_strategy = c.eval_blocks ? effective_eval_strategy(o) : EvalStrategy::no;
  const auto evaluation_due = [&](std::int64_t step) {
    switch (eval_strategy) {
      case EvalStrategy::automatic:
      case EvalStrategy::no: return false;
      case EvalStrategy::steps: return step % o.eval_steps == 0;  // eval_steps > 0 (cli.cpp)
      case EvalStrategy::epoch: return step % static_cast<std::int64_t>(steps_per_epoch.value()) == 0;
    }
    return false;
  };
  if (o.deepspeed_checks.total_num_steps && *o.deepspeed_checks.total_num_steps != total_steps) {
    throw std::invalid_argument("--deepspeed: \"scheduler.params.total_num_steps\": " +
                                std::to_string(*o.deepspeed_checks.total_num_steps) + " disagrees with the run's " +
                                std::to_string(total_steps) + " optimizer steps (set it to \"auto\", or give --max_steps " +
                                std::to_string(*o.deepspeed_checks.total_num_steps) + ")");
  }
  const double tokens_per_step = static_cast<double>(shape.global() * block_size);
  const double world = c.engine.world_size();
  const std::int64_t first_step = state.global_step;
  std::optional<LossScaler> scaler;
  if (c.precision.loss_scaling()) {
    scaler.emplace(o.loss_scaling);
    if (state.loss_scale > 0) {
      scaler->restore(state.loss_scale, state.loss_scale_good_steps,
                      state.loss_scale_hysteresis > 0 ? state.loss_scale_hysteresis : o.loss_scaling.hysteresis);
    }
  }

  const auto start = Clock::now();
  const double comm_start = c.engine.comm_wait_seconds();
  auto interval_start = start;
  double interval_comm_start = comm_start;
  double interval_loss = 0;
  std::int64_t interval_steps = 0;
  // Step losses are summed where they are computed and read only when logged or saved: reading a
  // GPU's loss every micro-batch would make the host wait for each backward to finish.
  at::Tensor unread_losses;
  const auto read_losses = [&] {
    if (!unread_losses.defined()) return;
    const double sum = unread_losses.item<double>();
    interval_loss += sum;
    state.train_loss_sum += sum;
    unread_losses = at::Tensor();
  };
  StepProfiler profiler(o.profile_steps, first_step,
                        fs::path(o.output_dir) / "profile" / ("rank-" + std::to_string(c.engine.rank()) + ".json"),
                        c.engine.device().is_cuda());
  const auto profile_written = [&] {
    c.reporter.message("profile written to " + profiler.trace().parent_path().string() +
                       "/ (a Chrome trace per rank: chrome://tracing or https://ui.perfetto.dev)");
  };
  // The end of an interval of steps: its loss (all-reduced at logging steps), tokens/s over the wall
  // time since the last record, the metrics record and TensorBoard scalars at logging steps, and
  // the progress line.
  const auto finish_interval = [&](std::int64_t at_step, double lr, const engine::GradientNorm& grad_norm, double epoch,
                                   bool logging_step) {
    const double steps_in_interval = static_cast<double>(interval_steps);
    double loss = interval_loss / steps_in_interval;
    // Before the interval is timed, so its step time includes this collective too.
    if (logging_step) loss = c.engine.all_reduce_sum({interval_loss})[0] / world / steps_in_interval;
    const double interval_seconds = seconds_since(interval_start);
    const StepReport report{at_step, total_steps, loss, lr, tokens_per_step * steps_in_interval / interval_seconds,
                            seconds_since(start) / static_cast<double>(at_step - first_step) * static_cast<double>(total_steps - at_step)};
    if (logging_step) {
      // Per step, as means over the interval: wall time, and the part of it rank 0 was blocked in
      // collectives (communication not overlapped with computation, or waiting for other ranks).
      const double step_time = interval_seconds / steps_in_interval;
      const double comm_wait = (c.engine.comm_wait_seconds() - interval_comm_start) / steps_in_interval;
      json::Object record{{"step", at_step}, {"epoch", metric(epoch)}, {"loss", metric(report.loss)},
                          {"learning_rate", metric(lr)}, {"grad_norm", metric(grad_norm.value())},
                          {"tokens_per_second", metric(report.tokens_per_second)},
                          {"step_time_s", metric(step_time)}, {"comm_wait_s", metric(comm_wait)}};
      std::vector<tensorboard::Scalar> scalars{{"train/loss", report.loss}, {"train/learning_rate", lr},
                                               {"train/grad_norm", grad_norm.value()}, {"train/tokens_per_second", report.tokens_per_second},
                                               {"train/step_time", step_time}, {"train/comm_wait", comm_wait},
                                               {"train/epoch", epoch}};
      if (scaler) {
        record.emplace_back("loss_scale", metric(scaler->scale()));
        scalars.push_back({"train/loss_scale", scaler->scale()});
      }
      c.reporter.record(record);
      c.reporter.scalars(at_step, scalars);
      interval_loss = 0;
      interval_steps = 0;
      interval_start = Clock::now();
      interval_comm_start = c.engine.comm_wait_seconds();
    }
    if (c.reporter.main) c.reporter.progress.step(report, logging_step);
  };
  // A logging step's record needs its loss and gradient norm, which on a GPU means waiting for the
  // step's last kernel; the GPU would then idle while the host writes the record, fetches the next
  // batch and queues the next step. So where nothing else must follow the step first (a
  // checkpoint, an evaluation, the end of training, fp16's overflow check, which reads the norm
  // anyway), the loop only starts copying the two numbers to the host and writes the record once
  // the next step's forward and backward are queued. Records keep their order. On a GPU only: on
  // the CPU the numbers are there when the step returns, and a record written after the next
  // step's forward and backward would time its interval across them (the last step's would hold
  // only its optimizer step). One process only: with several ranks the record's all-reduced loss
  // would make the host wait for the next step's backward and its gradient all-reduces instead
  // (the dist engine reads the reduced sum at once).
  struct PendingLog {
    std::int64_t step;
    double lr;
    double epoch;
    engine::HostRead losses;
    engine::GradientNorm grad_norm;
  };
  std::optional<PendingLog> pending;
  c.model->train();
  for (std::int64_t step = first_step; step < total_steps;) {
    profiler.before_step(step);
    const std::vector<at::Tensor> micro_batches = batches->next_step();
    const double micro_steps = static_cast<double>(micro_batches.size());
    for (std::size_t m = 0; m < micro_batches.size(); ++m) {
      c.engine.begin_micro_step(m + 1 == micro_batches.size());
      // To a GPU from pinned memory, so the upload does not hold the host up.
      const at::Tensor& batch = micro_batches[m];
      const at::Tensor ids = c.engine.device().is_cuda() ? batch.pin_memory().to(c.engine.device(), /*non_blocking=*/true)
                                                         : batch;
      const at::Tensor loss = c.model->loss(ids, ids);
      (loss * (scaler ? scaler->scale() : 1.0) / micro_steps).backward();
      // The step's loss is the micro-batches' mean, summed in double.
      const at::Tensor share = loss.detach().to(at::kDouble) / micro_steps;
      unread_losses = unread_losses.defined() ? unread_losses + share : share;
    }
    if (pending) {  // the previous step's record, now that this step's work is queued
      const double sum = pending->losses.value();
      interval_loss += sum;
      state.train_loss_sum += sum;
      finish_interval(pending->step, pending->lr, pending->grad_norm, pending->epoch, /*logging_step=*/true);
      pending.reset();
    }
    const double loss_scale = scaler ? scaler->scale() : 1.0;
    // Read only where needed (fp16's overflow check, logging): on a GPU reading waits for backward.
    engine::GradientNorm grad_norm = c.engine.finish_gradients(o.max_grad_norm, 1.0 / loss_scale);
    // A step skipped for overflow does not advance the schedule (transformers steps its scheduler
    // only when the optimizer ran).
    const double lr = schedule.at(step - state.skipped_steps);
    if (!scaler || scaler->update(std::isfinite(grad_norm.value()))) {
      c.engine.optimizer_step(lr);
    } else {
      c.engine.skip_step();
      ++state.skipped_steps;
      c.reporter.message("step " + std::to_string(step + 1) + ": fp16 gradients overflowed at loss scale " +
                         std::to_string(static_cast<long long>(loss_scale)) + "; step skipped, scale halved");
    }
    if (scaler) {
      state.loss_scale = scaler->scale();
      state.loss_scale_good_steps = scaler->good_steps();
      state.loss_scale_hysteresis = scaler->hysteresis_left();
    }
    if (profiler.after_step(step)) profile_written();
    state.global_step = ++step;
    ++interval_steps;

    const bool logging_step = step % o.logging_steps == 0 || step == total_steps;
    const bool saving_step = checkpoint_due(step);
    const bool eval_step = evaluation_due(step);
    const double epoch = steps_per_epoch ? static_cast<double>(step) / static_cast<double>(*steps_per_epoch)
                                         : static_cast<double>(batches->position().epoch);
    if (logging_step && !saving_step && !eval_step && step != total_steps && !scaler && world == 1 &&
        c.engine.device().is_cuda() && unread_losses.defined()) {
      grad_norm.start_read();
      pending.emplace(PendingLog{step, lr, epoch, engine::HostRead(unread_losses), std::move(grad_norm)});
      unread_losses = at::Tensor();
      continue;
    }
    // A terminal's progress line shows every step's loss: rank 0 reads it each step there.
    if (logging_step || saving_step || (c.reporter.main && c.reporter.progress.live())) read_losses();
    finish_interval(step, lr, grad_norm, epoch, logging_step);
    if (step == total_steps) break;
    // Evaluations and checkpoints are not training: the interval's clocks skip them.
    const auto pause_start = Clock::now();
    const double pause_comm_start = c.engine.comm_wait_seconds();
    if (eval_step) evaluate_during_training(c, state, *batches, last_eval);
    if (saving_step) save(c, state, *batches);
    interval_start += Clock::now() - pause_start;
    interval_comm_start += c.engine.comm_wait_seconds() - pause_comm_start;
  }
  if (profiler.finish()) profile_written();
  c.engine.complete_updates();  // what follows (saving, evaluation, export) sees every step
  summary.train_runtime = seconds_since(start);
  summary.train_comm_wait_seconds = c.engine.comm_wait_seconds() - comm_start;
  if (state.global_step > first_step) {
    if (evaluation_due(state.global_step)) evaluate_during_training(c, state, *batches, last_eval);
    if (checkpoint_due(state.global_step)) save(c, state, *batches);
  }
  summary.global_step = state.global_step;
  summary.train_samples_per_second = static_cast<double>((state.global_step - first_step) * static_cast<std::int64_t>(shape.global())) /
                                     std::max(summary.train_runtime, 1e-9);
  if (state.global_step > 0) {
    summary.train_loss = c.engine.all_reduce_sum({state.train_loss_sum})[0] / world / static_cast<double>(state.global_step);
  }
}

// --load_best_model_at_end, as transformers' Trainer does it after training: every rank loads the
// best checkpoint's weights (the run's last ones when they are the best), so that the final
// evaluation and the export are of that model; with --save_total_limit 1 only the best checkpoint
// is kept. `last_eval` is forgotten once another model is loaded.
void load_best_model(TrainContext& c, const LoopState& state, LastEvaluation& last_eval) {
  if (state.best_step == 0) {
    c.reporter.message("--load_best_model_at_end: no evaluation ranked a checkpoint; keeping the last model");
    return;
  }
  char text[160];
  std::snprintf(text, sizeof text, "best model: %s (%s %.6g)", io::checkpoint_dir_name(state.best_step).c_str(),
                c.o.metric_for_best_model.c_str(), state.best_metric.value_or(NAN));
  if (state.best_step != state.global_step) {
    c.engine.complete_updates();
    // With parameters sharded: the whole model into the parameters for the weights to land in.
    if (engine::ParameterUnits* units = c.engine.parameter_units()) units->gather_whole();
    io::load_hf_weights(c.model, fs::path(c.o.output_dir) / io::checkpoint_dir_name(state.best_step) / "model.safetensors");
    last_eval.reset();
    c.reporter.message(std::string(text) + ", loaded for the final evaluation and export");
  } else {
    c.reporter.message(std::string(text) + ": the last step's, as trained");
  }
  if (c.o.save_total_limit == 1) {
    c.engine.barrier();  // every rank has read the best weights before the others go
    prune_training_checkpoints(c.o.output_dir, c.engine.rank(), 1, state.best_step);
  }
}

// As transformers' Trainer.save_metrics: train_results.json and eval_results.json hold this run's
// figures of each split, and all_results.json is updated rather than replaced, so an evaluation
// run into a training run's directory keeps the train_* figures beside its new eval_* ones.
void write_results_files(const fs::path& dir, const json::Object& results, Reporter& reporter) {
  json::Object train, eval;
  for (const auto& [key, value] : results) {
    if (key == "global_step" || key.starts_with("train_")) train.emplace_back(key, value);
    if (key.starts_with("eval_") || key == "perplexity") eval.emplace_back(key, value);
  }
  if (train.size() > 1) io::atomic_write(dir / "train_results.json", json::write(train, 2) + "\n");
  if (!eval.empty()) io::atomic_write(dir / "eval_results.json", json::write(eval, 2) + "\n");
  json::Object all;
  const fs::path all_path = dir / "all_results.json";
  if (fs::exists(all_path)) {
    try {
      all = json::parse(io::read_file(all_path)).as_object();
    } catch (const std::exception& e) {
      reporter.message("warning: replacing " + all_path.string() + ", which cannot be read: " + e.what());
      all.clear();
    }
  }
  for (const auto& [key, value] : results) {
    const auto same = std::find_if(all.begin(), all.end(), [&](const auto& member) { return member.first == key; });
    if (same != all.end()) {
      same->second = value;
    } else {
      all.emplace_back(key, value);
    }
  }
  io::atomic_write(all_path, json::write(all, 2) + "\n");
}

void write_results(const TrainOptions& o, const TrainSummary& s, Reporter& reporter) {
  json::Object results{{"global_step", s.global_step}};
  if (o.do_train) {
    results.emplace_back("train_runtime", metric(s.train_runtime));
    results.emplace_back("train_comm_wait_seconds", metric(s.train_comm_wait_seconds));
    results.emplace_back("train_samples_per_second", metric(s.train_samples_per_second));
    if (s.train_loss) results.emplace_back("train_loss", metric(*s.train_loss));
  }
  if (s.eval_loss) {
    results.emplace_back("eval_loss", metric(*s.eval_loss));
    results.emplace_back("perplexity", metric(*s.perplexity));
    results.emplace_back("eval_bits_per_byte", metric(*s.eval_bits_per_byte));
  }
  reporter.record(results);
  write_results_files(fs::path(o.output_dir), results, reporter);
  std::string text = "***** results *****";
  for (const auto& [key, value] : results) {
    char line[96];
    if (value.is_integer()) {
      std::snprintf(line, sizeof line, "\n  %-26s = %lld", key.c_str(), static_cast<long long>(value.as_integer()));
    } else {
      std::snprintf(line, sizeof line, "\n  %-26s = %.4f", key.c_str(), value.is_null() ? NAN : value.as_double());
    }
    text += line;
  }
  reporter.message(text);
}

// What HF's Trainer checks of a DeepSpeed config once the world size is known.
void check_deepspeed_batch(const TrainOptions& o, const engine::TrainingEngine& engine) {
  if (!o.deepspeed_checks.train_batch_size) return;
  const std::int64_t batch = engine.world_size() * o.per_device_train_batch_size * o.gradient_accumulation_steps;
  if (*o.deepspeed_checks.train_batch_size != batch) {
    throw std::invalid_argument("--deepspeed: \"train_batch_size\": " + std::to_string(*o.deepspeed_checks.train_batch_size) +
                                " disagrees with the run's " + std::to_string(engine.world_size()) + " ranks x " +
                                std::to_string(o.per_device_train_batch_size) + " sequences x " +
                                std::to_string(o.gradient_accumulation_steps) + " micro-batches = " + std::to_string(batch) +
                                " (set it to \"auto\")");
  }
}

// Lines for the log about options taken from run_clm.py and DeepSpeed command lines that mean
// something else here, or nothing.
std::vector<std::string> compatibility_notes(const TrainOptions& o) {
  std::vector<std::string> notes = o.deepspeed_notes;
  if (o.torch_dtype == "bfloat16" || o.torch_dtype == "float16") {
    notes.push_back("--torch_dtype " + o.torch_dtype + ": parameters and gradients in " +
                    (o.torch_dtype == "bfloat16" ? "bf16" : "fp16") + ", master weights in fp32");
  }
  if (!o.use_fast_tokenizer) {
    notes.push_back("--use_fast_tokenizer false: this trainer has one tokenizer implementation, whose ids equal the fast tokenizer's");
  }
  if (!o.cache_dir.empty()) {
    notes.push_back("--cache_dir " + o.cache_dir + " is the Hugging Face hub cache, as in run_clm.py; the token cache is " +
                    (o.token_cache_dir.empty() ? (fs::path(o.output_dir) / "token-cache").string() : o.token_cache_dir) +
                    " (--token_cache_dir; before, --cache_dir named the token cache)");
  }
  if (o.dataloader_num_workers > 0) {
    notes.push_back("--dataloader_num_workers " + std::to_string(o.dataloader_num_workers) +
                    ": no effect here, every rank reads its blocks from the memory-mapped token cache");
  }
  return notes;
}

}  // namespace

TrainSummary run_training(const TrainOptions& o, engine::TrainingEngine& engine) {
  check_deepspeed_batch(o, engine);
  keep_freed_memory();
  if (o.threads > 0) torch::set_num_threads(static_cast<int>(o.threads));
  std::vector<fs::path> previous;
  if (engine.is_main()) previous = previous_run(o);
  engine.barrier();

  torch::manual_seed(static_cast<std::uint64_t>(o.seed));
  std::vector<std::string> hub_log;  // the snapshots that hub names resolved to: the run log's first lines
  const HubLookup hub{o.model_revision, o.cache_dir};
  const std::string model_dir = locate(o.model_name_or_path, "--model_name_or_path", NamedThing::model, hub, hub_log);
  const std::string tokenizer_dir = locate(o.tokenizer_name, "--tokenizer_name", NamedThing::tokenizer, hub, hub_log);
  const std::string config = locate(o.config_name, "--config_name", NamedThing::config, hub, hub_log);
  const ChosenTokenizer chosen = load_tokenizer(tokenizer_dir, model_dir);
  const tokenizer::Tokenizer& tokenizer = chosen.tokenizer;
  const ModelSource source{model_dir, config, o.model_type, o.config_overrides, o.low_cpu_mem_usage};
  const model::ModelConfig model_config = model_config_of(source, tokenizer);
  const std::uint64_t block_size = resolve_block_size(o, model_config);
  std::optional<VerifiedCheckpoint> resume;
  if (!o.resume_from_checkpoint.empty()) {
    resume = open_training_checkpoint(resolve_checkpoint(o.resume_from_checkpoint, o.output_dir, engine.rank()));
  }
  const DeviceTraits device = device_traits(engine.device());
  const Precision precision = resolve_precision(o, device);
  apply_math_modes(precision);
  TrainedModel made = make_trained_model(o, source, model_config, resume ? &*resume : nullptr, precision, engine);
  model::CausalLm model = made.model;
  LoopState state;
  if (resume) state = restore_state(*resume, engine);
  const fs::path logging_dir = resolve_logging_dir(o, resume, state.logging_dir);
  state.logging_dir = recorded_logging_dir(o, logging_dir);

  std::unique_ptr<EvalBlocks> eval_blocks;
  if (o.do_eval) eval_blocks = open_in_rank_order(engine, [&] { return open_eval_blocks(o, tokenizer, block_size, engine.is_main()); });
  if (eval_blocks && eval_blocks->count() == 0) {  // found before training, not after it
    throw std::invalid_argument(
        "--do_eval: the validation text holds no full block of " + std::to_string(block_size) + " tokens" +
        (o.validation_file.empty()
             ? " (--validation_split_percentage " + std::to_string(o.validation_split_percentage) +
                   " holds out that share of the training documents, whole files or .jsonl lines, and none "
                   "was chosen from a corpus this small): give --validation_file"
             : ": give a longer --validation_file or a smaller --block_size"));
  }
  std::unique_ptr<TrainBatches> batches;
  if (o.do_train) {
    batches = open_in_rank_order(engine, [&] {
      return open_train_batches(o, tokenizer, {block_size, batch_shape(o, engine), static_cast<std::uint64_t>(engine.rank())});
    });
  }
  // Everything this run needs has loaded: the old run it replaces may go now.
  if (engine.is_main()) {
    for (const fs::path& path : previous) fs::remove_all(path);
  }
  engine.barrier();

  Reporter reporter(o, engine.is_main(), logging_dir, state.global_step, resume.has_value(), resumes_in_place(o, resume));
  for (const std::string& line : hub_log) reporter.message(line);
  reporter.message("training on " + device.name + " in " + describe(precision));
  for (const std::string& line : made.log) reporter.message(line);
  if (engine.device().is_cpu()) reporter.message("fp32 matrix products on " + model::cpu_gemm_backend());
  if (o.offload_parameters && engine.device().is_cpu()) {
    reporter.message("--offload_parameters: on the CPU the parameter shards are in host memory already");
  }
  if (engine.device().is_cuda()) reporter.message("the trainer's CUDA kernels: " + model::cuda_kernels_status());
  reporter.message("tokenizer: " + chosen.origin);
  for (const std::string& note : compatibility_notes(o)) reporter.message(note);
  reporter.announce_logs(state.global_step);
  if (resume) reporter.message("resuming from " + resume->dir.string() + " at step " + std::to_string(state.global_step));
  resume.reset();  // release the checkpoint's memory maps

  const std::vector<std::uint32_t> text_bytes = eval_blocks ? text_bytes_by_id(tokenizer) : std::vector<std::uint32_t>();
  TrainContext context{o, tokenizer, engine, model, eval_blocks.get(), text_bytes, reporter, precision};

  TrainSummary summary;
  summary.global_step = state.global_step;
  LastEvaluation last_eval;
  if (o.do_train) train(context, std::move(batches), block_size, state, summary, last_eval);
  if (o.do_train && o.load_best_model_at_end) load_best_model(context, state, last_eval);
  if (eval_blocks) {
    if (!last_eval || last_eval->first != summary.global_step) {  // else the model the last evaluation saw
      last_eval.emplace(summary.global_step, evaluate(context));
      record_eval(context, summary.global_step, last_eval->second);
    }
    summary.eval_loss = last_eval->second.loss;
    summary.perplexity = std::exp(last_eval->second.loss);
    summary.eval_bits_per_byte = last_eval->second.bits_per_byte;
  }
  // With parameters sharded the export reads the model unit by unit, every rank gathering each.
  const io::ParameterReadHook read_unit = unit_reader(engine);
  if (!engine.is_main() && o.do_train && read_unit) io::visit_saved_parameters(model, read_unit);
  if (engine.is_main()) {
    if (o.do_train) {
      io::save_hf_model(model, o.output_dir, {}, max_shard_bytes(o), read_unit);
      tokenizer.save(o.output_dir);
      reporter.message("model saved to " + o.output_dir);
    }
    write_results(o, summary, reporter);
  }
  engine.barrier();
  return summary;
}

}  // namespace llmrdzv::train
