// Runs read_events.py on a log directory and parses its JSON (tensorboard_reader.hpp).
#include "tensorboard_reader.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "llmrdzv/io/json.hpp"

namespace trainer_test {

TensorBoardData read_with_tensorboard(const std::filesystem::path& logdir) {
  namespace json = llmrdzv::json;
  const std::filesystem::path out = logdir.string() + ".read.json";
  const std::filesystem::path err = logdir.string() + ".read.err";
  const std::string command = std::string(LLMRDZV_TOOLS_PYTHON) + " " + LLMRDZV_READ_EVENTS_SCRIPT + " '" +
                              logdir.string() + "' > '" + out.string() + "' 2> '" + err.string() + "'";
  const int status = std::system(command.c_str());
  std::ostringstream text, errors;
  text << std::ifstream(out).rdbuf();
  errors << std::ifstream(err).rdbuf();
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  if (status != 0) throw std::runtime_error("TensorBoard's reader failed (" + command + "):\n" + errors.str());

  TensorBoardData data;
  const json::Value parsed = json::parse(text.str());
  for (const auto& [tag, points] : parsed.find("scalars")->as_object()) {
    auto& series = data.scalars[tag];
    for (const json::Value& point : points.as_array()) {
      const json::Value& value = point.as_array()[1];
      series.emplace_back(point.as_array()[0].as_integer(),
                          value.is_null() ? std::nullopt : std::optional<double>(value.as_double()));
    }
  }
  for (const auto& [tag, points] : parsed.find("texts")->as_object()) {
    for (const json::Value& point : points.as_array()) {
      data.texts[tag].emplace_back(point.as_array()[0].as_integer(), point.as_array()[1].as_string());
    }
  }
  return data;
}

}  // namespace trainer_test
