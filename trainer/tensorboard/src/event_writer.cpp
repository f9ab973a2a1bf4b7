// EventWriter and trim_event_files (event_writer.hpp): Events built with the generated classes of
// this project's event.proto, framed by record_io.
#include "llmrdzv/tensorboard/event_writer.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "llmrdzv/io/atomic_file.hpp"
#include "llmrdzv/tensorboard/event.pb.h"
#include "llmrdzv/tensorboard/record_io.hpp"

namespace llmrdzv::tensorboard {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kFilePrefix = "events.out.tfevents.";

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// A name no other writer in this process or another one on this host has: TensorBoard reads a
// directory's files in name order, so the time comes first.
fs::path new_file_name(const fs::path& logdir) {
  static std::atomic<unsigned> counter{0};
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return logdir / (std::string(kFilePrefix) + std::to_string(seconds) + "." + host_name() + "." + std::to_string(getpid()) +
                   "." + std::to_string(counter++));
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("cannot read TensorBoard event file '" + path.string() + "'");
  return bytes;
}

std::string serialized(const Event& event) {
  std::string bytes;
  if (!event.SerializeToString(&bytes)) throw std::runtime_error("cannot serialize a TensorBoard event");
  return bytes;
}

Event event_at(std::int64_t step) {
  Event event;
  event.set_wall_time(wall_time());
  event.set_step(step);
  return event;
}

TrimmedFile trim_file(const fs::path& path, std::int64_t last_kept_step) {
  const std::string bytes = read_file(path);
  const RecordScan scan = scan_records(bytes);
  TrimmedFile trimmed{path, 0, scan.damage, !scan.damage.empty() && !scan.torn};
  if (trimmed.left_alone) return trimmed;
  std::string kept;
  for (const std::string_view record : scan.records) {
    Event event;
    if (!event.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
      // A record whose checksums hold but that is not an Event: keep it, it is not ours to judge.
      kept += frame_record(record);
      continue;
    }
    if (event.step() > last_kept_step) {
      ++trimmed.events_removed;
    } else {
      kept += frame_record(record);
    }
  }
  if (trimmed.events_removed > 0 || !trimmed.damage.empty()) io::atomic_write(path, kept);
  return trimmed;
}

}  // namespace

std::vector<TrimmedFile> trim_event_files(const fs::path& logdir, std::int64_t last_kept_step) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(logdir, ec)) {
    if (entry.is_regular_file() && entry.path().filename().string().starts_with(kFilePrefix)) files.push_back(entry.path());
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw std::runtime_error("cannot list TensorBoard log directory '" + logdir.string() + "': " + ec.message());
  }
  std::sort(files.begin(), files.end());
  std::vector<TrimmedFile> changed;
  for (const fs::path& file : files) {
    TrimmedFile trimmed = trim_file(file, last_kept_step);
    if (trimmed.events_removed > 0 || !trimmed.damage.empty()) changed.push_back(std::move(trimmed));  // cut or left alone
  }
  return changed;
}

EventWriter::EventWriter(const fs::path& logdir, std::optional<std::int64_t> resume_after_step) {
  std::error_code ec;
  fs::create_directories(logdir, ec);
  if (ec) throw std::runtime_error("cannot create TensorBoard log directory '" + logdir.string() + "': " + ec.message());
  if (resume_after_step) trimmed_ = trim_event_files(logdir, *resume_after_step);
  path_ = new_file_name(logdir);
  file_ = std::fopen(path_.c_str(), "wbx");
  if (!file_) throw std::runtime_error("cannot create TensorBoard event file '" + path_.string() + "': " + std::strerror(errno));
  try {
    Event version = event_at(0);
    version.set_file_version("brain.Event:2");
    append(serialized(version));
    if (resume_after_step) {
      Event start = event_at(*resume_after_step + 1);
      start.mutable_session_log()->set_status(SessionLog::START);
      append(serialized(start));
    }
  } catch (...) {
    std::fclose(file_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

EventWriter::~EventWriter() {
  if (file_) std::fclose(file_);
}

void EventWriter::scalars(std::int64_t step, std::span<const Scalar> values) {
  Event event = event_at(step);
  for (const Scalar& scalar : values) {
    Summary::Value* value = event.mutable_summary()->add_value();
    value->set_tag(std::string(scalar.tag));
    value->set_simple_value(static_cast<float>(scalar.value));
  }
  append(serialized(event));
}

void EventWriter::text(std::int64_t step, std::string_view tag, std::string_view markdown) {
  Event event = event_at(step);
  Summary::Value* value = event.mutable_summary()->add_value();
  value->set_tag(std::string(tag));
  value->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  TensorProto* tensor = value->mutable_tensor();
  tensor->set_dtype(DT_STRING);
  tensor->add_string_val(std::string(markdown));
  append(serialized(event));
}

void EventWriter::append(const std::string& serialized_event) {
  const std::string record = frame_record(serialized_event);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0) {
    throw std::runtime_error("cannot write TensorBoard event file '" + path_.string() + "': " + std::strerror(errno));
  }
}

}  // namespace llmrdzv::tensorboard
