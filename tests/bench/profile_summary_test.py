#!/usr/bin/env python3
"""Tests of bench/trainer/profile_summary.py: a hand-made GPU trace whose busy time, idle gaps,
kernel classes and host syncs are known, refusals of what is not a trace, and (given the trainer
binary) the summary of a real CPU trace from `trainer --profile_steps`.

Usage: profile_summary_test.py SUMMARY_SCRIPT [TRAINER]
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SUMMARY = None
TRAINER = None


def run_summary(*args):
    return subprocess.run([sys.executable, SUMMARY, *args], capture_output=True, text=True, timeout=120)


def event(cat, name, ts, dur, tid=1):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


# Window 0..1000 us. GPU: a GEMM 100..400, a flash kernel 350..500 (overlapping: union 100..500),
# a LayerNorm 600..650 (gap 100 us before it), a copy 700..710 (gap 50 us: not over 50),
# a memset 900..1000 (gap 190 us). Busy = 400 + 50 + 10 + 100 = 560 us.
# Host: a sync returning at 620 (inside a step) and the closing one ending at 1000.
GPU_TRACE = {"traceEvents": [
    event("cpu_op", "aten::addmm", 0, 300),
    event("cpu_op", "aten::mm", 10, 100),  # nested in addmm: addmm's self time is 200
    event("cpu_op", "aten::layer_norm", 500, 40),
    event("cuda_runtime", "cudaLaunchKernel", 20, 5),
    event("cuda_runtime", "cudaLaunchKernel", 30, 5),
    event("cuda_driver", "cuLaunchKernel", 40, 5),
    event("cuda_runtime", "cudaStreamSynchronize", 520, 100),
    event("cuda_runtime", "cudaDeviceSynchronize", 950, 50),
    event("kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 100, 300, tid=7),
    event("kernel", "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits>", 350, 150, tid=8),
    event("kernel", "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>", 600, 50, tid=7),
    event("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 700, 10, tid=9),
    event("gpu_memset", "Memset (Device)", 900, 100, tid=9),
    {"ph": "i", "name": "an instant event without a duration", "ts": 5},
]}


class SyntheticGpuTrace(unittest.TestCase):
    def summarise(self, trace, *args):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "rank-0.json")
            with open(path, "w") as f:
                json.dump(trace, f)
            return run_summary(path, *args)

    def test_json_figures(self):
        result = self.summarise(GPU_TRACE, "--json", "--steps", "2")
        self.assertEqual(result.returncode, 0, result.stderr)
        report = json.loads(result.stdout)
        self.assertAlmostEqual(report["window_ms"], 1.0)
        self.assertAlmostEqual(report["per_step_ms"], 0.5)
        gpu = report["gpu"]
        self.assertAlmostEqual(gpu["busy_ms"], 0.56)
        self.assertAlmostEqual(gpu["busy_share"], 0.56)
        self.assertEqual(gpu["kernels"], 3)
        self.assertEqual(gpu["launches"], 3)
        self.assertEqual(gpu["idle_gaps_over_50us"], 2)
        self.assertAlmostEqual(gpu["idle_in_gaps_over_50us_ms"], 0.29)
        classes = {k: v["ms"] for k, v in gpu["by_class"].items()}
        self.assertEqual(classes, {"gemm": 0.3, "attention": 0.15, "normalisation": 0.05, "memcpy/memset": 0.11})
        self.assertEqual(gpu["top_kernels"][0]["name"], GPU_TRACE["traceEvents"][8]["name"])
        self.assertEqual([s["name"] for s in gpu["host_syncs_in_steps"]], ["cudaStreamSynchronize"])
        cpu = {op["name"]: op["ms"] for op in report["cpu"]["top_ops"]}
        self.assertEqual(cpu, {"aten::addmm": 0.2, "aten::mm": 0.1, "aten::layer_norm": 0.04})

    def test_text_report(self):
        result = self.summarise(GPU_TRACE)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("GPU busy 0.6 ms = 56.0% of the window", result.stdout)
        self.assertIn("host syncs inside the steps: 1 (cudaStreamSynchronize 0.10 ms)", result.stdout)
        self.assertRegex(result.stdout, r"gemm\s+0\.30 ms\s+49\.2%")

    def test_refusals(self):
        with tempfile.TemporaryDirectory() as d:
            cases = {"not-json.json": "{ this is not json", "no-events.json": json.dumps({"schemaVersion": 1}),
                     "untimed.json": json.dumps({"traceEvents": [{"ph": "i", "name": "x", "ts": 1}]})}
            expected = {"not-json.json": "is not a JSON trace", "no-events.json": "has no traceEvents list",
                        "untimed.json": "records no timed events"}
            for name, text in cases.items():
                path = os.path.join(d, name)
                with open(path, "w") as f:
                    f.write(text)
                result = run_summary(path)
                self.assertEqual(result.returncode, 1, name)
                self.assertIn(expected[name], result.stderr)
            result = run_summary(os.path.join(d, "missing.json"))
            self.assertEqual(result.returncode, 1)
            self.assertIn("cannot read", result.stderr)
            result = run_summary(os.path.join(d, "untimed.json"), "--steps", "0")
            self.assertEqual(result.returncode, 2)
            self.assertIn("--steps and --top must be at least 1", result.stderr)


@unittest.skipUnless(len(sys.argv) > 2, "no trainer binary given")
class RealCpuTrace(unittest.TestCase):
    def test_trainer_trace(self):
        with tempfile.TemporaryDirectory() as d:
            corpus = os.path.join(d, "corpus.txt")
            with open(corpus, "w") as f:
                f.write("Abstract syntax trees. Bytecode runs. Coroutines yield. Dicts!! " * 20)
            out = os.path.join(d, "out")
            run = subprocess.run([TRAINER, "--do_train", "--train_file", corpus, "--output_dir", out,
                                  "--validation_split_percentage", "0", "--config_overrides",
                                  "n_layer=2,n_head=2,n_embd=32,n_positions=32", "--block_size", "16",
                                  "--per_device_train_batch_size", "2", "--threads", "1", "--max_steps", "4",
                                  "--profile_steps", "2", "--report_to", "none"],
                                 capture_output=True, text=True, timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
            self.assertEqual(run.returncode, 0, run.stderr)
            result = run_summary(os.path.join(out, "profile", "rank-0.json"), "--steps", "2", "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            report = json.loads(result.stdout)
            self.assertNotIn("gpu", report)  # a CPU run has no kernels
            self.assertGreater(report["window_ms"], 0)
            names = [op["name"] for op in report["cpu"]["top_ops"]]
            self.assertTrue(any(n.startswith("aten::") and "mm" in n for n in names), names)
            # Self times partition each thread's op time: their sum is at most threads x window.
            self.assertLessEqual(report["cpu"]["self_ms"], report["window_ms"] * 4)
            self.assertGreater(report["cpu"]["self_ms"], 0)


if __name__ == "__main__":
    SUMMARY = sys.argv[1]
    TRAINER = sys.argv[2] if len(sys.argv) > 2 else None
    unittest.main(argv=[sys.argv[0], "-v"])
