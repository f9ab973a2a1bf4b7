// What TensorBoard itself reads from a log directory (read_events.py, TensorBoard's
// EventAccumulator, run from the tools venv), for tests of the event files we write.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainer_test {

struct TensorBoardData {
  // tag -> (step, value) in the order TensorBoard keeps them; nullopt for a non-finite value.
  std::map<std::string, std::vector<std::pair<std::int64_t, std::optional<double>>>> scalars;
  std::map<std::string, std::vector<std::pair<std::int64_t, std::string>>> texts;
};

// Throws std::runtime_error with the reader's output when it fails.
TensorBoardData read_with_tensorboard(const std::filesystem::path& logdir);

}  // namespace trainer_test
