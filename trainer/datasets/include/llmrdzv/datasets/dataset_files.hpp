// Where a --dataset_name's split files are, offline, in the three layouts a login node leaves
// behind (run_clm.py's load_dataset(name, config) finds the first two itself):
//  (a) the datasets library's Arrow cache: {cache}/{org}___{name}/{config}/{version}/{hash}/ with
//      dataset_info.json and {name}-{split}[-NNNNN-of-NNNNN].arrow (Arrow IPC streams), the most
//      recently written matching folder, as datasets' offline cache fallback picks it;
//  (b) the hub cache: datasets--{org}--{name}/snapshots/{commit}/ (hub_cache.hpp), its README.md
//      `configs:` block mapping the config to split files (glob patterns), else the config's
//      folder of {split}-*.parquet files;
//  (c) a folder written by Dataset.save_to_disk / DatasetDict.save_to_disk (dataset_dict.json,
//      each split's state.json listing its _data_files).
// Only the file lists come from here; the files are read by text_rows.hpp.
#pragma once

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace llmrdzv::datasets {

// A dataset that cannot be found or read; the message names the file or folder and the problem.
class DatasetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class FileFormat { arrow_stream, parquet };

struct DatasetFiles {
  FileFormat format = FileFormat::arrow_stream;
  std::map<std::string, std::vector<std::filesystem::path>> splits;  // split name -> its files, in order
  std::string description;  // for the run log: the layout, folder and config used
};

struct DatasetRequest {
  std::string name;              // --dataset_name: org/name, name, or a save_to_disk folder
  std::string config;            // --dataset_config_name; empty = the only (or default) one
  std::string revision = "main"; // --dataset_revision (the hub cache's refs)
  std::string cache_dir;         // --cache_dir: the Arrow cache instead of $HF_DATASETS_CACHE
};

// datasets' Arrow cache folder: `explicit_dir`, else $HF_DATASETS_CACHE, else $HF_HOME/datasets,
// else $XDG_CACHE_HOME/huggingface/datasets, else ~/.cache/huggingface/datasets.
std::filesystem::path arrow_cache_dir(const std::string& explicit_dir);

// The split files of `request`, looked up in (c) when the name is a folder holding
// dataset_dict.json or state.json, else in (a), then (b). Throws DatasetError naming every place
// looked in and the commands that fill them.
DatasetFiles find_dataset(const DatasetRequest& request);

}  // namespace llmrdzv::datasets
