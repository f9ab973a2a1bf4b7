// `trainer tokenizer` (see tokenizer_training.hpp). One thread reads the corpus, checks that it is
// UTF-8 and cuts it into batches of whole lines; worker threads count the words of the batches
// into counters of their own, added together at the end (counting is the part of training that
// grows with the corpus). The merges then run on one thread.
#include "llmrdzv/train/tokenizer_training.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "llmrdzv/data/corpus.hpp"
#include "llmrdzv/io/utf8.hpp"
#include "llmrdzv/kernel_support/cpu_count.hpp"
#include "llmrdzv/tokenizer/bpe_training.hpp"
#include "llmrdzv/train/cli.hpp"
#include "llmrdzv/train/progress.hpp"

namespace llmrdzv::train {
namespace {

using Clock = std::chrono::steady_clock;

// Whole lines of one or more documents; `ends` closes each document's part, so that a document's
// last line without "\n" is not joined to the next document's first.
struct Batch {
  std::string text;
  std::vector<std::size_t> ends;
};
constexpr std::size_t kBatchBytes = 1 << 20;

void count_batch(const Batch& batch, tokenizer::WordCounts& counts) {
  std::size_t pos = 0;
  for (const std::size_t end : batch.ends) {
    while (pos < end) {
      const std::size_t newline = batch.text.find('\n', pos);
      const std::size_t line_end = newline < end ? newline + 1 : end;
      counts.add_sequence(std::string_view(batch.text).substr(pos, line_end - pos));
      pos = line_end;
    }
  }
}

// Counts batches on `threads` workers (none for one thread: the caller's thread counts).
class WordCounting {
 public:
  explicit WordCounting(unsigned threads) : counts_(threads) {
    if (threads <= 1) return;
    for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this, i] { work(counts_[i]); });
  }
  ~WordCounting() { stop(); }

  void add(Batch batch) {
    if (workers_.empty()) {
      count_batch(batch, counts_[0]);
      return;
    }
    std::unique_lock lock(mutex_);
    space_.wait(lock, [&] { return queue_.size() < 2 * workers_.size(); });
    queue_.push_back(std::move(batch));
    ready_.notify_one();
  }

  tokenizer::WordCounts finish() {
    stop();
    if (error_) std::rethrow_exception(error_);
    for (std::size_t i = 1; i < counts_.size(); ++i) counts_[0].merge(std::move(counts_[i]));
    return std::move(counts_[0]);
  }

 private:
  void work(tokenizer::WordCounts& counts) {
    for (;;) {
      Batch batch;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return done_ || !queue_.empty(); });
        if (queue_.empty()) return;
        batch = std::move(queue_.front());
        queue_.pop_front();
        space_.notify_one();
      }
      try {
        count_batch(batch, counts);
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

  std::vector<tokenizer::WordCounts> counts_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<Batch> queue_;
  bool done_ = false;
  std::exception_ptr error_;
};

// Offset of the first byte of `text` that is not part of well-formed UTF-8, or npos.
std::size_t invalid_utf8_at(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  for (std::size_t i = 0; i < text.size();) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    char32_t cp;
    const std::size_t n = utf8::decode(p + i, text.size() - i, cp);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

// The stage line: live on a terminal (redrawn at most 5 times a second), else printed when the
// stage ends.
class StageLine {
 public:
  explicit StageLine(std::FILE* out) : out_(out), live_(out && is_terminal(out)) {}
  void update(const std::string& line, bool final) {
    if (!out_) return;
    const auto now = Clock::now();
    if (!final && (!live_ || now - last_ < std::chrono::milliseconds(200))) return;
    last_ = now;
    if (live_) std::fputs("\r\033[K", out_);
    std::fputs(("trainer tokenizer: " + line).c_str(), out_);
    if (final || !live_) std::fputc('\n', out_);
    std::fflush(out_);
  }

 private:
  std::FILE* out_;
  bool live_;
  Clock::time_point last_{};
};

std::string megabytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

std::string seconds_since(Clock::time_point start) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", std::chrono::duration<double>(Clock::now() - start).count());
  return text;
}

}  // namespace

TokenizerTrainingResult train_tokenizer(const TokenizerOptions& options, std::FILE* progress) {
  const auto start = Clock::now();
  tokenizer::BpeTrainingOptions bpe_options{.vocab_size = static_cast<std::size_t>(options.vocab_size),
                                            .min_frequency = static_cast<std::uint64_t>(options.min_frequency),
                                            .special_tokens = special_token_list(options)};
  (void)tokenizer::train_bpe(tokenizer::WordCounts{}, bpe_options);  // a vocabulary size too small fails before reading

  data::SourceList sources = data::list_sources(options.train_file, {options.output_dir});
  std::uint64_t file_bytes = 0;
  for (const data::SourceFile& f : sources.files) file_bytes += f.size;
  const std::size_t files = sources.files.size();
  data::DocumentReader reader(std::move(sources), {});
  const unsigned threads = static_cast<unsigned>(options.threads > 0 ? options.threads : kernel_support::available_cpus());
  WordCounting counting(threads);
  StageLine line(progress);

  // The current document's lines: `carry` holds the start of a line the chunk did not finish.
  std::string carry;
  std::uint64_t line_number = 1;  // of the first line in carry, within its document
  Batch batch;
  std::uint64_t text_bytes = 0;
  data::DocumentReader::Chunk chunk;
  while (reader.next(chunk)) {
    text_bytes += chunk.text.size();
    carry.append(chunk.text);
    const std::size_t last_newline = carry.rfind('\n');
    const std::size_t complete = chunk.ends_document ? carry.size() : (last_newline == std::string::npos ? 0 : last_newline + 1);
    const std::string_view whole(carry.data(), complete);
    if (const std::size_t bad = invalid_utf8_at(whole); bad != std::string_view::npos) {
      const std::string_view before = whole.substr(0, bad);
      const std::size_t line_start = before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
      const auto lines_before = static_cast<std::uint64_t>(std::count(before.begin(), before.end(), '\n'));
      const data::DocumentReader::Position position = reader.position();
      const std::uint64_t line_in_document = line_number + lines_before;
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(whole[bad]));
      throw data::DataError(
          position.file.string() + ":" +
          (position.jsonl_line > 0 ? std::to_string(position.jsonl_line) + ": the text's line " + std::to_string(line_in_document)
                                   : std::to_string(line_in_document)) +
          ": not UTF-8 (byte " + byte + " at column " + std::to_string(bad - line_start + 1) +
          "); HF's tokenizer trainer, like this one, reads only UTF-8 text");
    }
    line_number += static_cast<std::uint64_t>(std::count(whole.begin(), whole.end(), '\n'));
    if (!whole.empty()) {
      batch.text.append(whole);
      batch.ends.push_back(batch.text.size());
    }
    carry.erase(0, complete);
    if (chunk.ends_document) line_number = 1;
    if (batch.text.size() >= kBatchBytes) {
      counting.add(std::move(batch));
      batch = Batch{};
      line.update("counting words: " + megabytes(text_bytes) + " of text read (files: " + megabytes(file_bytes) + ")", false);
    }
  }
  if (!batch.text.empty()) counting.add(std::move(batch));
  const tokenizer::WordCounts words = counting.finish();
  line.update("counted " + std::to_string(words.distinct()) + " distinct words in " + megabytes(text_bytes) + " of text (" +
                  std::to_string(files) + (files == 1 ? " file" : " files") + ", " + std::to_string(threads) +
                  (threads == 1 ? " thread" : " threads") + ") in " + seconds_since(start),
              true);

  const auto merging = Clock::now();
  const std::size_t target = bpe_options.vocab_size;
  const tokenizer::TrainedBpe bpe = tokenizer::train_bpe(words, bpe_options, [&](std::size_t merges, std::size_t vocab) {
    line.update("merging: " + std::to_string(merges) + " merges, " + std::to_string(vocab) + "/" + std::to_string(target) +
                    " tokens",
                false);
  });
  tokenizer::save_trained_bpe(bpe, options.output_dir);
  line.update(std::to_string(bpe.merges.size()) + " merges, " + std::to_string(bpe.tokens.size()) + " tokens in " +
                  seconds_since(merging) + "; wrote " + options.output_dir + " (" + seconds_since(start) + " in all)",
              true);
  return {bpe.tokens.size(), bpe.merges.size(), words.distinct(), text_bytes};
}

}  // namespace llmrdzv::train
