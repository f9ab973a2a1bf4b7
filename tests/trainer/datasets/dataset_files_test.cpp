// Hub datasets offline (llmrdzv/datasets): the datasets library itself (datasets_oracle.py in the
// project venv) writes the Arrow cache under a hub name (and reads it back offline with
// load_dataset(name, config)), the hub cache's parquet layout with and without a README configs
// block, and save_to_disk folders, from a corpus made here; the trainer must find each layout and
// read the same rows of the same text column.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "llmrdzv/datasets/dataset_files.hpp"
#include "llmrdzv/datasets/text_rows.hpp"
#include "llmrdzv/io/json.hpp"
#include "scoped_environment.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
namespace ds = llmrdzv::datasets;
namespace json = llmrdzv::json;
using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;

namespace {

// The cache variables for one scope, restored after it.
struct CacheEnvironment : llmrdzv::testing::ScopedEnvironment {
  explicit CacheEnvironment(const std::map<std::string, std::string>& values)
      : ScopedEnvironment({"HF_DATASETS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME"}, values) {}
};

// Rows with what tokenisers meet: line breaks, non-ASCII text, an empty row, long and short rows.
std::string corpus(const std::string& text_key, const std::string& other_key, int rows, int seed) {
  std::string out;
  for (int i = 0; i < rows; ++i) {
    std::string text = i % 7 == 3 ? "" : "row " + std::to_string(i * seed) + ": caf\\u00e9 \\u2014 \\u4e2d\\u6587\\nsecond line";
    for (int k = 0; k < (i * seed) % 5; ++k) text += " and more words";
    out += "{\"" + other_key + "\": " + std::to_string(i) + ", \"" + text_key + "\": \"" + text + "\"}\n";
  }
  return out;
}

// The layouts datasets wrote under `out`, and the rows it reads from each.
json::Value make_layouts(const ScratchDir& dir, const std::string& text_key, const std::string& other_key) {
  const std::string train = dir.write("train.jsonl", corpus(text_key, other_key, 60, 3));
  const std::string valid = dir.write("valid.jsonl", corpus(text_key, other_key, 9, 5));
  const std::string command = std::string(LLMRDZV_TEST_PYTHON) + " " + LLMRDZV_DATASETS_ORACLE + " layouts " + train + " " +
                              valid + " " + dir.file("out") + " > " + dir.file("oracle.log") + " 2>&1";
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  return json::parse(read_file(dir / "out" / "expected.json"));
}

void expect_rows(const ds::DatasetFiles& found, const json::Value& expected, const std::string& column = "") {
  REQUIRE(found.splits.size() == expected.as_object().size());
  for (const auto& [split, rows] : expected.as_object()) {
    INFO("split " << split << " of " << found.description);
    REQUIRE(found.splits.contains(split));
    const ds::TextRows read = ds::read_text_rows(found.splits.at(split), found.format, column);
    REQUIRE(read.size() == rows.as_array().size());
    for (std::size_t i = 0; i < read.size(); ++i) CHECK(read.row(i) == rows.as_array()[i].as_string());
  }
}

}  // namespace

TEST_CASE("datasets' Arrow cache, the hub cache's parquet files and save_to_disk folders read as datasets reads them",
          "[datasets][oracle]") {
  const ScratchDir dir("datasets-layouts");
  const json::Value expected = make_layouts(dir, "text", "id");
  const fs::path out = dir / "out";

  SECTION("the Arrow cache, under its hub name") {
    const CacheEnvironment env({{"HF_DATASETS_CACHE", (out / "arrow").string()}, {"HF_HUB_CACHE", (out / "hub").string()}});
    for (const std::string config : {"cfg", ""}) {  // the only config is the default
      const ds::DatasetFiles found = ds::find_dataset({"org/name", config, "main", ""});
      CHECK(found.format == ds::FileFormat::arrow_stream);
      CHECK_THAT(found.description, Catch::Contains("the datasets Arrow cache") && Catch::Contains("org___name/cfg/0.0.0/"));
      expect_rows(found, *expected.find("arrow"));
    }
    // --cache_dir is the Arrow cache, as load_dataset(cache_dir=...) takes it.
    const CacheEnvironment elsewhere({{"HF_DATASETS_CACHE", dir.file("nothing")}, {"HF_HUB_CACHE", dir.file("nothing")}});
    expect_rows(ds::find_dataset({"org/name", "cfg", "main", (out / "arrow").string()}), *expected.find("arrow"));
  }
  SECTION("the hub cache, with and without a configs block") {
    for (const char* layout : {"hub", "hub-folders"}) {
      const CacheEnvironment env({{"HF_DATASETS_CACHE", dir.file("nothing")}, {"HF_HUB_CACHE", (out / layout).string()}});
      const ds::DatasetFiles found = ds::find_dataset({"org/name", "cfg", "main", ""});
      CHECK(found.format == ds::FileFormat::parquet);
      CHECK(found.splits.at("train").size() == 2);
      CHECK_THAT(found.description, Catch::Contains("datasets--org--name") && Catch::Contains("config cfg"));
      expect_rows(found, *expected.find(layout));
    }
    const CacheEnvironment env({{"HF_DATASETS_CACHE", dir.file("nothing")}, {"HF_HUB_CACHE", (out / "hub").string()}});
    CHECK_THROWS_WITH(ds::find_dataset({"org/name", "", "main", ""}),
                      Catch::Contains("has several configs and no default: give --dataset_config_name (one of other, cfg)"));
    CHECK_THROWS_WITH(ds::find_dataset({"org/name", "cfg", "v2", ""}), Catch::Contains("no refs/v2"));
  }
  SECTION("save_to_disk folders") {
    expect_rows(ds::find_dataset({(out / "saved").string(), "", "main", ""}), *expected.find("saved"));
    expect_rows(ds::find_dataset({(out / "saved-one").string(), "", "main", ""}), *expected.find("saved-one"));
  }
  SECTION("a name found nowhere names every place looked in and the commands that fill them") {
    const CacheEnvironment env({{"HF_DATASETS_CACHE", (out / "arrow").string()}, {"HF_HUB_CACHE", (out / "hub").string()}});
    CHECK_THROWS_WITH(ds::find_dataset({"org/absent", "", "main", ""}),
                      Catch::Contains((out / "arrow" / "org___absent").string()) &&
                          Catch::Contains((out / "hub" / "datasets--org--absent").string()) &&
                          Catch::Contains("datasets.load_dataset(\"org/absent\")") &&
                          Catch::Contains("hf download org/absent --repo-type dataset"));
  }
}

TEST_CASE("without a text column the first column is read, as run_clm.py reads it", "[datasets][oracle]") {
  const ScratchDir dir("datasets-first-column");
  // "body" comes first in the JSON objects: corpus() writes the other key first, so swap them.
  const json::Value expected = make_layouts(dir, "n", "body");
  (void)expected;
  const fs::path out = dir / "out";
  const ds::DatasetFiles found = ds::find_dataset({(out / "saved").string(), "", "main", ""});
  // The first column is "body" (an integer here): refused naming the column and its type.
  CHECK_THROWS_WITH(ds::read_text_rows(found.splits.at("train"), found.format, ""),
                    Catch::Contains("column 'body' holds int64, not text"));
  // Named, the string column is read.
  const ds::TextRows rows = ds::read_text_rows(found.splits.at("train"), found.format, "n");
  CHECK(rows.column == "n");
  CHECK(rows.size() == 60);
}
