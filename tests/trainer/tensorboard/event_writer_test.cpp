// EventWriter's files as TensorBoard's own reader sees them: scalars with their steps and values,
// text, and a resumed run that continues the curves with no duplicate steps, also after a killed
// run left a torn record behind.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>

#include "llmrdzv/tensorboard/event_writer.hpp"
#include "llmrdzv/tensorboard/record_io.hpp"
#include "scratch_dir.hpp"
#include "tensorboard_reader.hpp"

using namespace llmrdzv::tensorboard;
using trainer_test::read_with_tensorboard;

namespace {

using Series = std::vector<std::pair<std::int64_t, std::optional<double>>>;

void log_steps(EventWriter& writer, std::int64_t first, std::int64_t last, double offset) {
  for (std::int64_t step = first; step <= last; ++step) {
    const Scalar values[] = {{"train/loss", offset + static_cast<double>(step)}, {"train/learning_rate", 0.5}};
    writer.scalars(step, values);
  }
}

Series expected_loss(std::int64_t first, std::int64_t last, double offset) {
  Series series;
  for (std::int64_t step = first; step <= last; ++step) series.emplace_back(step, offset + static_cast<double>(step));
  return series;
}

// A finished run's event file in logdir: steps 1..last_step logged (loss = step).
std::filesystem::path written_run(const std::filesystem::path& logdir, std::int64_t last_step) {
  EventWriter writer(logdir, std::nullopt);
  log_steps(writer, 1, last_step, 0.0);
  return writer.path();
}

std::size_t event_file_count(const std::filesystem::path& dir) {
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) count += entry.path().filename().string().starts_with("events.out.tfevents.");
  return count;
}

}  // namespace

TEST_CASE("TensorBoard reads back scalars and text", "[tensorboard]") {
  llmrdzv::testing::ScratchDir dir("tb");
  const auto logdir = dir / "run";
  {
    EventWriter writer(logdir, std::nullopt);
    CHECK(writer.path().parent_path() == logdir);
    CHECK(writer.path().filename().string().starts_with("events.out.tfevents."));
    writer.text(0, "args", "```\nlearning_rate: 0.001\n```");
    log_steps(writer, 1, 5, 10.0);
    const Scalar diverged[] = {{"train/loss", std::numeric_limits<double>::quiet_NaN()}};
    writer.scalars(6, diverged);
  }
  const auto data = read_with_tensorboard(logdir);
  Series loss = expected_loss(1, 5, 10.0);
  loss.emplace_back(6, std::nullopt);
  CHECK(data.scalars.at("train/loss") == loss);
  REQUIRE(data.scalars.at("train/learning_rate").size() == 5);
  CHECK(data.scalars.at("train/learning_rate")[4] == std::make_pair(std::int64_t{5}, std::optional<double>(0.5)));
  REQUIRE(data.texts.at("args").size() == 1);
  CHECK(data.texts.at("args")[0].second == "```\nlearning_rate: 0.001\n```");
}

TEST_CASE("every event is on disk as soon as it is written", "[tensorboard]") {
  llmrdzv::testing::ScratchDir dir("tb");
  EventWriter writer(dir / "run", std::nullopt);
  log_steps(writer, 1, 3, 0.0);
  // Read while the writer is still open, as a live TensorBoard does.
  CHECK(read_with_tensorboard(dir / "run").scalars.at("train/loss") == expected_loss(1, 3, 0.0));
}

TEST_CASE("a resumed run continues the curves without duplicate steps", "[tensorboard]") {
  llmrdzv::testing::ScratchDir dir("tb");
  const auto logdir = dir / "run";
  { EventWriter first(logdir, std::nullopt); log_steps(first, 1, 8, 100.0); }  // checkpoint at 5, killed after 8
  std::filesystem::path first_file = std::filesystem::directory_iterator(logdir)->path();
  const auto size_before = std::filesystem::file_size(first_file);
  {
    EventWriter resumed(logdir, std::int64_t{5});
    log_steps(resumed, 6, 10, 200.0);
  }
  CHECK(std::filesystem::file_size(first_file) < size_before);  // steps 6-8 of the first run are gone
  CHECK(event_file_count(logdir) == 2);
  Series expected = expected_loss(1, 5, 100.0);
  for (const auto& point : expected_loss(6, 10, 200.0)) expected.push_back(point);
  CHECK(read_with_tensorboard(logdir).scalars.at("train/loss") == expected);
}

TEST_CASE("a torn record from a killed run is tolerated by TensorBoard and cut by the resumed writer", "[tensorboard]") {
  llmrdzv::testing::ScratchDir dir("tb");
  const auto logdir = dir / "run";
  const std::filesystem::path first_file = written_run(logdir, 4);
  const std::string torn = frame_record(std::string(40, 'e')).substr(0, 25);
  std::ofstream(first_file, std::ios::app | std::ios::binary) << torn;
  const auto damaged_size = std::filesystem::file_size(first_file);

  // TensorBoard itself reads the good records of the damaged file.
  CHECK(read_with_tensorboard(logdir).scalars.at("train/loss") == expected_loss(1, 4, 0.0));

  {
    EventWriter resumed(logdir, std::int64_t{4});
    log_steps(resumed, 5, 6, 0.0);
  }
  CHECK(std::filesystem::file_size(first_file) == damaged_size - torn.size());
  CHECK(read_with_tensorboard(logdir).scalars.at("train/loss") == expected_loss(1, 6, 0.0));
}

TEST_CASE("a corrupt record in the middle of a file is left as it is, not rewritten away", "[tensorboard]") {
  llmrdzv::testing::ScratchDir dir("tb");
  const auto logdir = dir / "run";
  const std::filesystem::path file = written_run(logdir, 6);
  std::string bytes = llmrdzv::testing::read_file(file.string());
  const RecordScan before = scan_records(bytes);
  REQUIRE(before.records.size() == 7);  // the file version and 6 steps
  bytes[static_cast<std::size_t>(before.records[3].data() - bytes.data())] ^= 0x01;  // step 3's data
  dir.write("run/" + file.filename().string(), bytes);
  const auto changed = trim_event_files(logdir, 1);
  REQUIRE(changed.size() == 1);
  CHECK(changed[0].left_alone);
  CHECK(changed[0].events_removed == 0);
  CHECK_THAT(changed[0].damage, Catch::Contains("checksum"));
  CHECK(llmrdzv::testing::read_file(file.string()) == bytes);  // steps 4-6 after it are still there
}

TEST_CASE("trim_event_files reports what it removed and leaves undamaged files alone", "[tensorboard]") {
  llmrdzv::testing::ScratchDir dir("tb");
  const auto logdir = dir / "run";
  const std::filesystem::path file = written_run(logdir, 6);
  dir.write("run/notes.txt", "not an event file");
  const auto time_before = std::filesystem::last_write_time(file);
  CHECK(trim_event_files(logdir, 6).empty());
  CHECK(std::filesystem::last_write_time(file) == time_before);
  const auto changed = trim_event_files(logdir, 2);
  REQUIRE(changed.size() == 1);
  CHECK(changed[0].path == file);
  CHECK(changed[0].events_removed == 4);
  CHECK(changed[0].damage.empty());
  CHECK_FALSE(changed[0].left_alone);
  CHECK(read_with_tensorboard(logdir).scalars.at("train/loss") == expected_loss(1, 2, 0.0));
  CHECK(trim_event_files(dir / "missing", 0).empty());
}

TEST_CASE("an unwritable log directory is an error that names it", "[tensorboard]") {
  llmrdzv::testing::ScratchDir dir("tb");
  dir.write("file", "x");
  CHECK_THROWS_WITH(EventWriter(dir / "file" / "run", std::nullopt), Catch::Contains("file/run"));
}
