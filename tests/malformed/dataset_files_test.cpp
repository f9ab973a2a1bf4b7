// Damaged and foreign dataset files (llmrdzv/datasets): a text column of another type, truncated
// parquet files and Arrow streams, seeded damaged copies of both, a missing split, damaged
// dataset_dict.json, state.json and README configs blocks. Each is read consistently or refused
// with DatasetError naming the file and the problem, never a crash or another exception. The
// valid files come from the datasets library in the venv.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "feed_damaged.hpp"
#include "llmrdzv/datasets/dataset_files.hpp"
#include "llmrdzv/datasets/text_rows.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
namespace ds = llmrdzv::datasets;
using llmrdzv::testing::feed_damaged;
using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;

namespace {

// Writes, with the datasets library: DIR/good.parquet and DIR/saved (save_to_disk, train and
// validation) with a string "text" column, and DIR/numbers.parquet whose "text" column is int64.
void write_files(const ScratchDir& dir) {
  const std::string script =
      "import datasets, sys; d = sys.argv[1]\n"
      "rows = {'text': ['row %d with some words' % i for i in range(300)], 'id': list(range(300))}\n"
      "datasets.Dataset.from_dict(rows).to_parquet(d + '/good.parquet')\n"
      "datasets.Dataset.from_dict({'text': list(range(5))}).to_parquet(d + '/numbers.parquet')\n"
      "datasets.DatasetDict({'train': datasets.Dataset.from_dict(rows),"
      " 'validation': datasets.Dataset.from_dict({'text': ['v'], 'id': [0]})}).save_to_disk(d + '/saved')\n";
  dir.write("make.py", script);
  const std::string command = std::string(LLMRDZV_TEST_PYTHON) + " " + dir.file("make.py") + " " + dir.path().string() +
                              " > " + dir.file("make.log") + " 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);
}

std::string message_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const ds::DatasetError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("damaged and foreign dataset files are refused naming the file and the problem", "[malformed][datasets]") {
  const ScratchDir dir("malformed-datasets");
  write_files(dir);
  const fs::path arrow = dir / "saved" / "train" / "data-00000-of-00001.arrow";
  REQUIRE(ds::read_text_rows({dir / "good.parquet"}, ds::FileFormat::parquet, "").size() == 300);
  REQUIRE(ds::read_text_rows({arrow}, ds::FileFormat::arrow_stream, "").size() == 300);

  // A "text" column of integers.
  CHECK_THAT(message_of([&] { ds::read_text_rows({dir / "numbers.parquet"}, ds::FileFormat::parquet, ""); }),
             Catch::Contains("numbers.parquet") && Catch::Contains("column 'text' holds int64, not text"));
  // A column that is not there.
  CHECK_THAT(message_of([&] { ds::read_text_rows({dir / "good.parquet"}, ds::FileFormat::parquet, "body"); }),
             Catch::Contains("has no column 'body' (its columns: text, id)"));
  // Truncated files: half of each.
  const std::string parquet = read_file(dir / "good.parquet");
  dir.write("half.parquet", parquet.substr(0, parquet.size() / 2));
  CHECK_THAT(message_of([&] { ds::read_text_rows({dir / "half.parquet"}, ds::FileFormat::parquet, ""); }),
             Catch::Contains("half.parquet") && Catch::Contains("not a readable parquet file"));
  const std::string stream = read_file(arrow);
  dir.write("half.arrow", stream.substr(0, stream.size() / 2));
  CHECK_THAT(message_of([&] { ds::read_text_rows({dir / "half.arrow"}, ds::FileFormat::arrow_stream, ""); }),
             Catch::Contains("half.arrow") && Catch::Contains("damaged Arrow IPC stream"));
  // A parquet file read as an Arrow stream, and the other way round.
  CHECK_THAT(message_of([&] { ds::read_text_rows({dir / "good.parquet"}, ds::FileFormat::arrow_stream, ""); }),
             Catch::Contains("good.parquet"));
  CHECK_THAT(message_of([&] { ds::read_text_rows({arrow}, ds::FileFormat::parquet, ""); }),
             Catch::Contains("not a readable parquet file"));

  // A split dataset_dict.json names whose folder is gone, and a data file state.json lists that is gone.
  fs::remove_all(dir / "saved" / "validation");
  CHECK_THAT(message_of([&] { ds::find_dataset({dir.file("saved"), "", "main", ""}); }),
             Catch::Contains("dataset_dict.json' names split 'validation'") && Catch::Contains("is missing"));
  dir.write("saved/dataset_dict.json", "{\"splits\": [\"train\"]}");
  fs::rename(arrow, dir / "moved.arrow");
  CHECK_THAT(message_of([&] { ds::find_dataset({dir.file("saved"), "", "main", ""}); }),
             Catch::Contains("state.json' lists") && Catch::Contains("data-00000-of-00001.arrow', which is missing"));
  fs::rename(dir / "moved.arrow", arrow);
}

TEST_CASE("damaged parquet files and Arrow streams are read consistently or refused with DatasetError",
          "[malformed][datasets]") {
  const ScratchDir dir("malformed-dataset-bytes");
  write_files(dir);
  const fs::path arrow = dir / "saved" / "train" / "data-00000-of-00001.arrow";
  for (const auto& [seed_file, format] : {std::pair{dir / "good.parquet", ds::FileFormat::parquet},
                                          std::pair{arrow, ds::FileFormat::arrow_stream}}) {
    feed_damaged<ds::DatasetError>(seed_file.filename().string(), {read_file(seed_file)}, 300, [&](const std::string& bytes) {
      const std::string path = dir.write("damaged.bin", bytes);
      const ds::TextRows rows = ds::read_text_rows({path}, format, "");
      if (rows.ends.size() > 300 || (!rows.ends.empty() && rows.ends.back() != rows.bytes.size())) {
        throw llmrdzv::testing::Broken("rows do not add up");
      }
    });
  }
}

TEST_CASE("damaged dataset_dict.json, state.json and README configs blocks are refused with DatasetError",
          "[malformed][datasets]") {
  const ScratchDir dir("malformed-dataset-json");
  write_files(dir);
  const std::string dict = read_file(dir / "saved" / "dataset_dict.json");
  feed_damaged<ds::DatasetError>("dataset_dict.json", {dict}, 1000, [&](const std::string& text) {
    dir.write("saved/dataset_dict.json", text);
    ds::find_dataset({dir.file("saved"), "", "main", ""});
  });
  dir.write("saved/dataset_dict.json", dict);
  const std::string state = read_file(dir / "saved" / "train" / "state.json");
  feed_damaged<ds::DatasetError>("state.json", {state}, 1000, [&](const std::string& text) {
    dir.write("saved/train/state.json", text);
    ds::find_dataset({dir.file("saved"), "", "main", ""});
  });
  // A hub snapshot whose README configs block is damaged.
  const std::string commit(40, 'a');
  const fs::path repo = dir / "hub" / "datasets--org--name";
  dir.write("hub/datasets--org--name/refs/main", commit);
  fs::create_directories(repo / "snapshots" / commit / "data");
  fs::copy_file(dir / "good.parquet", repo / "snapshots" / commit / "data" / "train-00000-of-00001.parquet");
  const std::string card = "---\nconfigs:\n- config_name: cfg\n  data_files:\n  - split: train\n    path: data/train-*\n---\n";
  ::setenv("HF_HUB_CACHE", dir.file("hub").c_str(), 1);
  ::setenv("HF_DATASETS_CACHE", dir.file("no-arrow-cache").c_str(), 1);
  feed_damaged<ds::DatasetError>("README.md", {card}, 1000, [&](const std::string& text) {
    dir.write("hub/datasets--org--name/snapshots/" + commit + "/README.md", text);
    ds::find_dataset({"org/name", "cfg", "main", ""});
  });
  ::unsetenv("HF_HUB_CACHE");
  ::unsetenv("HF_DATASETS_CACHE");
}
