// The Prometheus text exposition writer: escaping of label values and HELP text, number
// formatting, HELP/TYPE lines, and histograms (cumulative buckets ending in +Inf, _sum, _count).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "llmrdzv/metrics/exposition.hpp"

using namespace llmrdzv::metrics;

TEST_CASE("label values escape backslash, double quote and line feed", "[metrics]") {
  CHECK(escape_label_value("plain-id.0") == "plain-id.0");
  CHECK(escape_label_value("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
  // HELP text keeps its quotes.
  CHECK(escape_help("say \"hi\"\\\n") == "say \"hi\"\\\\\\n");
}

TEST_CASE("values: whole numbers plainly, fractions exactly, infinities and NaN by name", "[metrics]") {
  CHECK(format_value(0) == "0");
  CHECK(format_value(64) == "64");
  CHECK(format_value(-3) == "-3");
  CHECK(format_value(0.25) == "0.25");
  CHECK(format_value(1e-4) == "0.0001");
  CHECK(format_value(1700000000.5) == "1700000000.5");
  CHECK(format_value(1e-9) == "1e-09");
  CHECK(format_value(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(format_value(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(format_value(std::nan("")) == "NaN");
}

TEST_CASE("a family starts with HELP and TYPE, samples carry escaped labels", "[metrics]") {
  Exposition out;
  out.family("rdzvd_x_total", "counter", "Things.\nCounted.");
  out.sample("rdzvd_x_total", {{"rdzv_id", "job \"7\""}, {"code", "OK"}}, 3);
  out.sample("rdzvd_x_total", 1);
  CHECK(out.text() ==
        "# HELP rdzvd_x_total Things.\\nCounted.\n"
        "# TYPE rdzvd_x_total counter\n"
        "rdzvd_x_total{rdzv_id=\"job \\\"7\\\"\",code=\"OK\"} 3\n"
        "rdzvd_x_total 1\n");
}

TEST_CASE("histogram buckets are cumulative, end with +Inf, and come with _sum and _count", "[metrics]") {
  Histogram histogram({0.1, 1});
  for (double value : {0.05, 0.1, 0.5, 2.0}) histogram.observe(value);
  CHECK(histogram.cumulative(0) == 2);  // 0.1 itself falls in le="0.1"
  CHECK(histogram.cumulative(1) == 3);
  CHECK(histogram.count() == 4);
  Exposition out;
  out.histogram("h_seconds", {{"method", "Get"}}, histogram);
  CHECK(out.text() ==
        "h_seconds_bucket{method=\"Get\",le=\"0.1\"} 2\n"
        "h_seconds_bucket{method=\"Get\",le=\"1\"} 3\n"
        "h_seconds_bucket{method=\"Get\",le=\"+Inf\"} 4\n"
        "h_seconds_sum{method=\"Get\"} 2.65\n"
        "h_seconds_count{method=\"Get\"} 4\n");
}

TEST_CASE("an empty histogram has zero buckets, sum and count", "[metrics]") {
  Exposition out;
  out.histogram("h", {}, Histogram({1}));
  CHECK(out.text() == "h_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n");
}
