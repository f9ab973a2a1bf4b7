// The optimizer state of --shard_parameters cut again for another world size (see
// shard_resharding.hpp).
#include "llmrdzv/dist/shard_resharding.hpp"

#include <ATen/ATen.h>

#include <map>
#include <regex>
#include <stdexcept>
#include <string>
#include <utility>

namespace llmrdzv::dist {
namespace {

[[noreturn]] void fail(const std::string& problem) {
  throw std::runtime_error("resharding the --shard_parameters optimizer state: " + problem);
}

constexpr const char* kStepKind = "step";  // one count per part, the same in every piece

struct Part {
  int unit = 0;
  bool decay = true;
};

// "exp_avg.unit3.decay" -> kind "exp_avg", part "unit3.decay".
bool split_entry(const std::string& name, std::string& kind, std::string& part, Part& place) {
  static const std::regex entry(R"(^(.+)\.(unit(\d{1,9})\.(decay|no_decay))$)");
  std::smatch m;
  if (!std::regex_match(name, m, entry)) return false;
  kind = m[1];
  part = m[2];
  place.unit = std::stoi(m[3]);
  place.decay = m[4] == "decay";
  return true;
}

std::int64_t integer_of(const at::Tensor& t, const std::string& what) {
  if (t.numel() != 1 || t.scalar_type() != at::kLong) fail("'" + what + "' is not one integer");
  return t.item<std::int64_t>();
}

}  // namespace

engine::TensorMap reshard_shard_state(const engine::TensorMap& saved, const std::vector<UnitLayout>& units, int rank,
                                      int world) {
  const auto count = saved.find(kShardParametersOldWorldEntry);
  if (count == saved.end()) fail(std::string("no '") + kShardParametersOldWorldEntry + "' entry");
  const std::int64_t old_world = integer_of(count->second, kShardParametersOldWorldEntry);
  if (old_world < 1) fail("the old world size is " + std::to_string(old_world));

  // (kind, part) -> old rank -> its piece.
  std::map<std::pair<std::string, std::string>, std::map<std::int64_t, at::Tensor>> pieces;
  std::map<std::string, Part> parts;
  static const std::regex prefix(R"(^shard\.(\d{1,9})/(.+)$)");
  for (const auto& [name, tensor] : saved) {
    if (name == kShardParametersOldWorldEntry) continue;
    std::smatch m;
    if (!std::regex_match(name, m, prefix)) fail("unexpected entry '" + name + "'");
    const std::int64_t k = std::stoll(m[1]);
    const std::string inner = m[2];
    if (k >= old_world) {
      fail("an entry of rank " + std::to_string(k) + " of " + std::to_string(old_world) + ": '" + name + "'");
    }
    if (inner == kShardParametersWorldEntry) {
      const std::int64_t said = integer_of(tensor, name);
      if (said != old_world) {
        fail("rank " + std::to_string(k) + "'s state was sharded over " + std::to_string(said) +
             " ranks, but the checkpoint was written by " + std::to_string(old_world));
      }
      continue;
    }
    std::string kind, part;
    Part place;
    if (!split_entry(inner, kind, part, place)) fail("unexpected entry '" + name + "'");
    if (static_cast<std::size_t>(place.unit) >= units.size()) {
      fail("'" + name + "' is for unit " + std::to_string(place.unit) + " and this model has " +
           std::to_string(units.size()) + " units (another model?)");
    }
    parts[part] = place;
    pieces[{kind, part}][k] = tensor;
  }

  engine::TensorMap out;
  for (const auto& [key, by_rank] : pieces) {
    const auto& [kind, part] = key;
    const Part place = parts.at(part);
    const UnitLayout& unit = units[static_cast<std::size_t>(place.unit)];
    const std::int64_t lo = place.decay ? 0 : unit.decay_numel, hi = place.decay ? unit.decay_numel : unit.numel;
    const std::int64_t old_shard = shard_numel(unit.numel, old_world);
    const std::string what = kind + "." + part;
    std::vector<at::Tensor> ordered;
    for (std::int64_t k = 0; k < old_world; ++k) {
      const PiecePlace expected = shard_piece(lo, hi, old_shard, k);
      const std::int64_t length = expected.to - expected.from;
      const auto found = by_rank.find(k);
      if (length == 0) {
        if (found != by_rank.end()) {
          fail("rank " + std::to_string(k) + " saved '" + what +
               "', a piece this model's layout does not give it (another model?)");
        }
        continue;
      }
      if (found == by_rank.end()) fail("rank " + std::to_string(k) + "'s piece of '" + what + "' is missing");
      const std::int64_t want = kind == kStepKind ? 1 : length;
      if (found->second.numel() != want) {
        fail("rank " + std::to_string(k) + "'s piece of '" + what + "' has " + std::to_string(found->second.numel()) +
             " elements and this model's layout gives it " + std::to_string(want) + " (another model?)");
      }
      ordered.push_back(found->second.reshape({-1}));
    }
    const PiecePlace mine = shard_piece(lo, hi, shard_numel(unit.numel, world), rank);
    if (mine.to == mine.from) continue;
    if (kind == kStepKind) {
      const std::int64_t step = integer_of(ordered.front(), what);
      for (const auto& t : ordered) {
        if (integer_of(t, what) != step) fail("the ranks' step counts for '" + what + "' differ");
      }
      out[what] = ordered.front().clone();
    } else {
      const at::Tensor whole = at::cat(ordered);
      out[what] = whole.narrow(0, mine.from - lo, mine.to - mine.from).clone();
    }
  }
  out[kShardParametersWorldEntry] = at::tensor(static_cast<std::int64_t>(world), at::kLong);
  return out;
}

}  // namespace llmrdzv::dist
