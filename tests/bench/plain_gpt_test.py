#!/usr/bin/env python3
"""Tests of bench/trainer/plain_gpt.py, trainer-bench's plain PyTorch GPT-2 peer: given
GPT2LMHeadModel's weights it is the same network (same parameter names and count, the same loss
and gradients in fp32 on the CPU, dropout at 0), it
refuses activations and an untied head it does not build, and trainer-bench refuses it for a
shape of another family.

Usage: plain_gpt_test.py BENCH_DIR (bench/trainer), run with a Python that has torch and transformers.
"""
import os
import subprocess
import sys
import unittest

BENCH_DIR = None


def config(**overrides):
    import transformers

    values = dict(n_layer=2, n_head=4, n_embd=64, n_positions=32, vocab_size=300, resid_pdrop=0.0, embd_pdrop=0.0,
                  attn_pdrop=0.0)
    values.update(overrides)
    return transformers.GPT2Config(**values)


class PlainGptTest(unittest.TestCase):
    def test_same_network_as_hf(self):
        import torch
        from transformers import GPT2LMHeadModel
        from plain_gpt import PlainGPT

        torch.manual_seed(0)
        for activation in ("gelu_new", "gelu"):
            with self.subTest(activation=activation):
                c = config(activation_function=activation)
                hf = GPT2LMHeadModel(c).train()
                plain = PlainGPT(c).train()
                hf_params = dict(hf.named_parameters())
                plain_params = dict(plain.named_parameters())
                self.assertEqual(sorted(hf_params), sorted(plain_params))
                # HF's Conv1D keeps [in, out] where nn.Linear keeps [out, in]; embeddings alike.
                transposed = lambda name: name.endswith("weight") and (".attn." in name or ".mlp." in name)
                with torch.no_grad():
                    for name, p in plain_params.items():
                        p.copy_(hf_params[name].t() if transposed(name) else hf_params[name])
                ids = torch.randint(0, c.vocab_size, (3, 32))
                hf_loss = hf(input_ids=ids, labels=ids).loss
                plain_loss = plain(ids)
                torch.testing.assert_close(plain_loss, hf_loss, rtol=1e-5, atol=1e-6)
                hf_loss.backward()
                plain_loss.backward()
                for name, p in plain_params.items():
                    g = hf_params[name].grad
                    torch.testing.assert_close(p.grad, g.t() if transposed(name) else g, rtol=1e-4, atol=1e-6,
                                               msg=lambda m: f"{name}: {m}")

    def test_refuses_what_it_does_not_build(self):
        from plain_gpt import PlainGPT

        with self.assertRaisesRegex(ValueError, "activation 'relu'"):
            PlainGPT(config(activation_function="relu"))
        with self.assertRaisesRegex(ValueError, "tied"):
            PlainGPT(config(tie_word_embeddings=False))

    def test_bench_refuses_it_for_other_families(self):
        done = subprocess.run([sys.executable, os.path.join(BENCH_DIR, "trainer_bench.py"), "--trainer", "/nonexistent",
                               "--shapes", "opt-125m", "--peers", "gpt-eager"], capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("GPT-2 shapes only, not 'opt-125m'", done.stderr)
        done = subprocess.run([sys.executable, os.path.join(BENCH_DIR, "trainer_bench.py"), "--trainer", "/nonexistent",
                               "--shapes", "gpt2", "--peers", "hf-eager,jax"], capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("unknown peer", done.stderr)


if __name__ == "__main__":
    BENCH_DIR = sys.argv.pop(1)
    sys.path.insert(0, BENCH_DIR)
    unittest.main()
