// Hub model names (`gpt2`, `org/name`) resolved offline, as huggingface_hub resolves them with
// HF_HUB_OFFLINE=1: a local directory of that name wins (transformers' rule); else the hub cache's
// models--{org}--{name}/refs/{revision} names a commit and snapshots/{commit}/ holds its files. The
// trainer never reaches the network: a name that is not in the cache is one error naming the
// folders looked in and the `hf download` command that fills them on a machine with network.
#pragma once

#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace llmrdzv::hub {

// A name that is neither a local path nor found (complete) in the cache.
class HubError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The hub cache folder and where its path came from, for messages ("$HF_HUB_CACHE", "--cache_dir").
struct CacheDir {
  std::filesystem::path path;
  std::string origin;
};

// huggingface_hub's choice: `explicit_dir` (run_clm's --cache_dir) when not empty, else
// $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE (its old name), else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub ('~' and $VARS expanded as
// huggingface_hub expands them).
CacheDir model_cache_dir(const std::string& explicit_dir);

// Whether `name` has the form of a hub repository id (`name` or `org/name`, letters, digits, '-',
// '_' and '.', no '--' or '..', at most 96 characters), as huggingface_hub validates it.
bool is_repo_id(std::string_view name);

// The other name a canonical model that moved into an organisation has on the hub (gpt2 <->
// openai-community/gpt2, distilgpt2 <-> distilbert/distilgpt2, ...); empty for other names.
std::string_view moved_name(std::string_view repo_id);

// The two kinds of hub repository the trainer reads: models--{org}--{name} and datasets--{org}--{name}.
enum class RepoType { model, dataset };

// A file the snapshot must hold, given as alternatives (model.safetensors or its shard index).
using RequiredFile = std::vector<std::string_view>;

struct Resolved {
  std::filesystem::path dir;  // the local directory or the snapshot folder
  bool from_cache = false;
  std::string description;    // for the run log: "hub cache FOLDER, revision ..., snapshot ..." (empty for a local directory)
};

// `name` for option `option` ("--model_name_or_path"): a local directory of that name, else the
// snapshot of `revision` of the repository of `type` (a branch or tag under refs/, or a 40-hex commit) in `cache`, looked up
// under the name and then under its moved_name. Every file of `required` must be in the snapshot:
// one recorded as missing on the hub (.no_exist/{commit}/{file}) is refused as not in the
// repository, one merely not downloaded with the command that downloads it. A dangling ref, a ref
// naming no snapshot, or a snapshot file whose blob is gone is refused naming the path.
Resolved resolve(const std::string& name, const std::string& revision, const CacheDir& cache, std::string_view option,
                 std::span<const RequiredFile> required, RepoType type = RepoType::model);

}  // namespace llmrdzv::hub
