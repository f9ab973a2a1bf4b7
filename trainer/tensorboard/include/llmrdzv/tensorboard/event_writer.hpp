// TensorBoard event files from C++: `tensorboard --logdir DIR` plots what EventWriter writes into
// DIR. One writer owns one new file, events.out.tfevents.<seconds>.<host>.<pid>.<n>, whose first
// event is the file version; each call appends one event and flushes it, so a live TensorBoard
// follows the run and a killed run loses at most the record it was writing.
// No protobuf type appears here: this header is included by translation units that include torch.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace llmrdzv::tensorboard {

// What trim_event_files did to one file.
struct TrimmedFile {
  std::filesystem::path path;
  std::uint64_t events_removed = 0;
  std::string damage;       // the torn tail that was cut, or the corruption that made it leave the file alone
  bool left_alone = false;  // corrupt: nothing removed
};

struct Scalar {
  std::string_view tag;  // "train/loss": the part before '/' is TensorBoard's group
  double value;          // stored as a float, as TensorBoard's scalars are
};

class EventWriter {
 public:
  // Creates `logdir` if needed and a new event file in it. With `resume_after_step` S (a run
  // resuming from its checkpoint at step S), the event files already in logdir first go through
  // trim_event_files(logdir, S), and the new file starts with a SessionLog START at step S + 1,
  // so the curves continue without the steps the resumed run will log again. Throws
  // std::runtime_error naming the file on any failure.
  EventWriter(const std::filesystem::path& logdir, std::optional<std::int64_t> resume_after_step);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // One event at `step` holding every value (non-finite values are written as they are).
  void scalars(std::int64_t step, std::span<const Scalar> values);
  // Markdown text under `tag`, shown by TensorBoard's text dashboard.
  void text(std::int64_t step, std::string_view tag, std::string_view markdown);

  const std::filesystem::path& path() const { return path_; }
  // What the resume did to the files already there (see trim_event_files).
  const std::vector<TrimmedFile>& trimmed() const { return trimmed_; }

 private:
  void append(const std::string& serialized_event);

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::vector<TrimmedFile> trimmed_;
};

// The resume step of EventWriter, on its own: every events.out.tfevents.* file in logdir loses its
// events after `last_kept_step` and a torn last record (a killed writer), each file rewritten
// atomically. A file with a corrupt record (a checksum that does not hold, not a torn end) is left
// as it is: what follows the corruption cannot be read, so it is not rewritten away. Returns the
// files that changed or were left alone.
std::vector<TrimmedFile> trim_event_files(const std::filesystem::path& logdir, std::int64_t last_kept_step);

}  // namespace llmrdzv::tensorboard
