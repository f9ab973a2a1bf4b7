// Adapters from trainer/data (token cache, group_texts blocks, sampler, stream) to the tensors the
// loop feeds the model.
#include "training_data.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <span>

#include "llmrdzv/data/run_clm_blocks.hpp"
#include "llmrdzv/datasets/dataset_files.hpp"
#include "llmrdzv/datasets/text_rows.hpp"
#include "llmrdzv/io/sha256.hpp"

#include "llmrdzv/data/corpus.hpp"
#include "llmrdzv/data/streaming.hpp"
#include "llmrdzv/data/token_cache.hpp"

namespace llmrdzv::train {
namespace {

using data::DocumentSelection;

DocumentSelection train_selection(const TrainOptions& o) {
  if (!o.validation_file.empty() || o.validation_split_percentage == 0) return {};
  return {DocumentSelection::Part::train, static_cast<unsigned>(o.validation_split_percentage)};
}

data::CacheOptions cache_options(const TrainOptions& o, std::string name) {
  data::CacheOptions options;
  options.dir = o.token_cache_dir.empty() ? std::filesystem::path(o.output_dir) / "token-cache" : std::filesystem::path(o.token_cache_dir);
  options.name = std::move(name);
  options.rebuild = o.overwrite_cache;
  return options;
}

at::Tensor rows_tensor(const data::Blocks& blocks, std::span<const std::uint64_t> indices) {
  const auto block = static_cast<std::int64_t>(blocks.block_size());
  at::Tensor out = at::empty({static_cast<std::int64_t>(indices.size()), block}, at::kLong);
  std::int64_t* row = out.data_ptr<std::int64_t>();
  for (const std::uint64_t index : indices) {
    blocks.read(index, {row, static_cast<std::size_t>(block)});
    row += block;
  }
  return out;
}

// A token store with its blocks (the blocks point into the store, so they live together).
struct CachedBlocks {
  CachedBlocks(data::TokenStore store_in, std::uint64_t block_size)
      : store(std::move(store_in)), blocks(store, block_size) {}
  data::TokenStore store;
  data::Blocks blocks;
};

// The documents of `input`, never the run's own output directory, token cache or logging
// directory where the input folder holds them; with --keep_linebreaks false a text file's lines
// are its documents (data/corpus.hpp). With `report`, stderr lines name the binary files
// a folder listing left out (a NUL byte in their first 8 KiB) and the run's folders it did not
// enter, so a user sees what did not go in.
data::SourceList sources_of(const TrainOptions& o, const std::string& input, bool report) {
  std::vector<std::filesystem::path> own = {o.output_dir, cache_options(o, "").dir};
  if (!o.logging_dir.empty()) own.emplace_back(o.logging_dir);
  data::SourceList sources = data::list_sources(input, own);
  std::size_t by_line = 0;
  for (data::SourceFile& file : sources.files) {
    file.lines = !file.jsonl && !o.keep_linebreaks;
    by_line += file.lines ? 1 : 0;
  }
  if (report && by_line > 0) {
    std::cerr << "trainer: " << input << ": --keep_linebreaks false: " << by_line
              << " text file(s) read a document per line, line breaks dropped, as run_clm.py's text datasets read them\n";
  }
  if (report) {
    for (const auto& dir : sources.excluded) {
      std::cerr << "trainer: " << input << ": not reading " << dir.string()
                << " (this run's output, token cache or logging directory) as text\n";
    }
  }
  if (report && !sources.skipped.empty()) {
    constexpr std::size_t kNamed = 5;
    std::string text = "trainer: " + input + ": skipped " + std::to_string(sources.skipped.size()) +
                       " binary file(s) (a NUL byte in the first 8 KiB):";
    for (std::size_t i = 0; i < std::min(kNamed, sources.skipped.size()); ++i) text += " " + sources.skipped[i].string();
    if (sources.skipped.size() > kNamed) text += " ...";
    std::cerr << text << '\n';
  }
  return sources;
}

std::unique_ptr<CachedBlocks> open_cached(const TrainOptions& o, const std::string& input, bool report,
                                          const DocumentSelection& selection,
                                          const tokenizer::Tokenizer& tokenizer,
                                          const data::CacheOptions& cache, std::uint64_t block_size) {
  const data::SourceList sources = sources_of(o, input, report);
  return std::make_unique<CachedBlocks>(data::TokenStore::open_or_build(sources, selection, tokenizer, cache),
                                        block_size);
}

// --dataset_name's train or validation rows as run_clm.py's blocks (run_clm_blocks.hpp). Without a
// validation split, --validation_split_percentage P holds out rows [0, round(n P / 100)) as
// datasets' train[:P%] / train[P%:] do (Python's round: halves to even). The token cache keys on
// the split files' paths, sizes and modification times, the column, the slice, the block size and
// --preprocessing_num_workers (run_clm's map shards move the dropped remainders).
std::unique_ptr<CachedBlocks> open_dataset_part(const TrainOptions& o, bool validation, bool report,
                                                const tokenizer::Tokenizer& tokenizer, const data::CacheOptions& cache,
                                                std::uint64_t block_size) {
  const datasets::DatasetFiles found =
      datasets::find_dataset({o.dataset_name, o.dataset_config_name, o.dataset_revision, o.cache_dir});
  const bool has_validation = found.splits.contains("validation");
  const std::string split = validation && has_validation ? "validation" : "train";
  if (!found.splits.contains(split)) {
    throw datasets::DatasetError("--dataset_name " + o.dataset_name + ": " + found.description + " has no '" + split +
                                 "' split" + (validation ? "" : " (--do_train needs one)"));
  }
  const std::vector<std::filesystem::path>& files = found.splits.at(split);
  const bool sliced = !has_validation;  // train[:P%] for validation, train[P%:] for training
  const auto workers = static_cast<unsigned>(std::max<std::int64_t>(o.preprocessing_num_workers, 1));
  io::Sha256 fingerprint;
  fingerprint.update("run_clm blocks 2").update(split).update(o.text_column_name).update_u64(block_size);
  fingerprint.update_u64(workers);
  fingerprint.update_u64(sliced ? static_cast<std::uint64_t>(o.validation_split_percentage) : 100).update_u64(validation);
  for (const auto& file : files) {
    std::error_code ec;
    fingerprint.update(file.string()).update_u64(std::filesystem::file_size(file, ec));
    fingerprint.update_u64(static_cast<std::uint64_t>(std::filesystem::last_write_time(file, ec).time_since_epoch().count()));
  }
  const auto produce = [&](const data::TokenStore::TokenSink& sink) {
    const datasets::TextRows rows = datasets::read_text_rows(files, found.format, o.text_column_name);
    const auto n = static_cast<std::uint64_t>(rows.size());
    const auto cut = sliced ? static_cast<std::uint64_t>(std::nearbyint(static_cast<double>(o.validation_split_percentage) *
                                                                        static_cast<double>(n) / 100.0))
                            : 0;
    const std::uint64_t first = sliced && !validation ? cut : 0;
    const std::uint64_t count = sliced ? (validation ? cut : n - cut) : n;
    const data::GroupingReport grouped = data::group_rows(
        count, [&](std::uint64_t i) { return rows.row(first + i); }, tokenizer,
        {block_size, workers}, sink);
    if (report) {
      std::cerr << "trainer: --dataset_name " << o.dataset_name << ": " << found.description << "; " << split
                << (sliced ? (validation ? "[:" : "[") + std::to_string(o.validation_split_percentage) + (validation ? "%]" : "%:]") : "")
                << ": " << count << " rows of column '" << rows.column << "' -> " << grouped.blocks << " blocks of "
                << block_size << " tokens (run_clm's group_texts per " << data::kMapBatchRows << " rows"
                << (workers > 1 ? " of each of " + std::to_string(data::map_shards(count, workers).size()) + " map shards" : std::string())
                << (grouped.short_batches ? ", " + std::to_string(grouped.short_batches) + " batch(es) shorter than a block left out" : "")
                << "), read with " << datasets::arrow_reader_version() << '\n';
    }
  };
  return std::make_unique<CachedBlocks>(data::TokenStore::open_or_build(fingerprint.hex_digest(), produce, tokenizer, cache),
                                        block_size);
}

class CachedBatches final : public TrainBatches {
 public:
  CachedBatches(std::unique_ptr<CachedBlocks> cached, std::uint64_t num_blocks, std::uint64_t seed,
                const DataPlan& plan)
      : cached_(std::move(cached)), sampler_(num_blocks, seed, plan.shape, plan.rank) {}

  std::vector<at::Tensor> next_step() override {
    std::vector<at::Tensor> micro_batches;
    for (const auto& indices : sampler_.next_step()) micro_batches.push_back(rows_tensor(cached_->blocks, indices));
    return micro_batches;
  }
  std::optional<std::uint64_t> steps_per_epoch() const override { return sampler_.steps_per_epoch(); }
  data::SamplerPosition position() const override { return sampler_.position(); }
  std::string state() const override { return sampler_.state(); }
  void restore(std::string_view state) override { sampler_.restore(state); }

 private:
  std::unique_ptr<CachedBlocks> cached_;
  data::BlockSampler sampler_;
};

class StreamedBatches final : public TrainBatches {
 public:
  StreamedBatches(const TrainOptions& o, const tokenizer::Tokenizer& tokenizer, const DataPlan& plan)
      : block_size_(static_cast<std::int64_t>(plan.block_size)),
        batch_(static_cast<std::int64_t>(plan.shape.per_device_batch)),
        stream_(sources_of(o, o.train_file, plan.rank == 0), train_selection(o), tokenizer, plan.block_size, plan.shape,
                plan.rank) {}

  std::vector<at::Tensor> next_step() override {
    std::vector<std::vector<std::int64_t>> ids;
    // At the end of an epoch's stream the next call starts the next epoch.
    if (!stream_.next_step(ids) && !stream_.next_step(ids)) {
      throw data::DataError("the training stream does not hold one full global batch of blocks");
    }
    std::vector<at::Tensor> micro_batches;
    for (const auto& micro : ids) {
      micro_batches.push_back(at::tensor(micro, at::kLong).view({batch_, block_size_}));
    }
    return micro_batches;
  }
  std::optional<std::uint64_t> steps_per_epoch() const override { return std::nullopt; }
  data::SamplerPosition position() const override { return stream_.position(); }
  std::string state() const override { return stream_.state(); }
  void restore(std::string_view state) override { stream_.restore(state); }

 private:
  std::int64_t block_size_;
  std::int64_t batch_;
  data::StreamingBlocks stream_;
};

class CachedEvalBlocks final : public EvalBlocks {
 public:
  CachedEvalBlocks(std::unique_ptr<CachedBlocks> cached, std::uint64_t limit)
      : cached_(std::move(cached)), count_(std::min(cached_->blocks.count(), limit)) {}
  std::uint64_t count() const override { return count_; }
  at::Tensor read(std::uint64_t first, std::uint64_t n) const override {
    std::vector<std::uint64_t> indices(n);
    for (std::uint64_t i = 0; i < n; ++i) indices[i] = first + i;
    return rows_tensor(cached_->blocks, indices);
  }

 private:
  std::unique_ptr<CachedBlocks> cached_;
  std::uint64_t count_;
};

std::uint64_t limit_of(std::int64_t max_samples) {
  return max_samples > 0 ? static_cast<std::uint64_t>(max_samples) : ~std::uint64_t{0};
}

}  // namespace

std::unique_ptr<TrainBatches> open_train_batches(const TrainOptions& o, const tokenizer::Tokenizer& tokenizer,
                                                 const DataPlan& plan) {
  if (o.streaming) return std::make_unique<StreamedBatches>(o, tokenizer, plan);
  auto cached = !o.dataset_name.empty()
                    ? open_dataset_part(o, /*validation=*/false, plan.rank == 0, tokenizer, cache_options(o, "train"), plan.block_size)
                    : open_cached(o, o.train_file, plan.rank == 0, train_selection(o), tokenizer, cache_options(o, "train"),
                                  plan.block_size);
  const std::uint64_t blocks = std::min(cached->blocks.count(), limit_of(o.max_train_samples));
  return std::make_unique<CachedBatches>(std::move(cached), blocks, static_cast<std::uint64_t>(o.seed), plan);
}

std::unique_ptr<EvalBlocks> open_eval_blocks(const TrainOptions& o, const tokenizer::Tokenizer& tokenizer,
                                             std::uint64_t block_size, bool report) {
  std::unique_ptr<CachedBlocks> cached;
  if (!o.dataset_name.empty()) {
    cached = open_dataset_part(o, /*validation=*/true, report, tokenizer, cache_options(o, "validation"), block_size);
  } else if (!o.validation_file.empty()) {
    cached = open_cached(o, o.validation_file, report, {}, tokenizer, cache_options(o, "validation"), block_size);
  } else if (o.validation_split_percentage > 0 && !o.train_file.empty()) {
    cached = open_cached(o, o.train_file, /*report=*/false,  // the training data's listing says it
                         {DocumentSelection::Part::validation, static_cast<unsigned>(o.validation_split_percentage)},
                         tokenizer, cache_options(o, "validation"), block_size);
  } else {
    return nullptr;
  }
  return std::make_unique<CachedEvalBlocks>(std::move(cached), limit_of(o.max_eval_samples));
}

}  // namespace llmrdzv::train
