"""Unit tests of parity_adapter.py's standard-library part (no torch, no DeepSpeed needed).

    .venv-deepspeed/bin/python -m pytest adapters/deepspeed/test_parity_adapter.py
    python3 -m unittest adapters/deepspeed/test_parity_adapter.py     # also works without pytest
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from parity_adapter import (DIGEST_COMPONENTS, TENSORS_INLINE_MAX, Parity, digest_bytes,  # noqa: E402
                            digest_json)


class FakeScalar:
    """Something with .item(), like a tensor or numpy scalar."""

    def __init__(self, value):
        self.value = value

    def item(self):
        return self.value


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


class ParityTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.metrics = os.path.join(self.dir.name, "sub", "metrics.jsonl")

    def tearDown(self):
        self.dir.cleanup()

    def parity(self, **env):
        base = {"PARITY_METRICS_FILE": self.metrics, "PARITY_STEPS": "10", "PARITY_PHASE": "split",
                "PARITY_STOP_AT": "5", "PARITY_SAVE_AT": "5", "PARITY_SEED": "7",
                "PARITY_CHECKPOINT_DIR": "/ck", "RANK": "0"}
        base.update(env)
        return Parity.from_env(base)

    def test_from_env_reads_the_contract(self):
        p = self.parity(PARITY_RESUME_FROM="/ck/global_step5/", PARITY_RESUME_KIND="native",
                        PARITY_RUN_DIR="/run")
        self.assertEqual((p.steps, p.stop_at, p.save_at, p.seed), (10, 5, 5, 7))
        self.assertEqual((p.checkpoint_dir, p.resume_kind, p.run_dir), ("/ck", "native", "/run"))
        self.assertEqual(p.load_location(), ("/ck", "global_step5"))

    def test_empty_values_mean_absent_and_stop_at_defaults_to_steps(self):
        p = self.parity(PARITY_STOP_AT="", PARITY_SAVE_AT="", PARITY_SEED="", PARITY_RESUME_FROM="")
        self.assertEqual((p.stop_at, p.save_at, p.seed, p.resume_from), (10, None, None, None))
        with self.assertRaises(ValueError):
            p.load_location()

    def test_first_step_is_one_past_the_restored_global_steps(self):
        class Engine:
            global_steps = 50
        self.assertEqual(self.parity().first_step(Engine()), 1)
        self.assertEqual(self.parity(PARITY_RESUME_FROM="/ck/global_step50").first_step(Engine()), 51)

    def test_step_records_are_full_precision(self):
        p = self.parity()
        x = 2.7182818284590451
        p.step(1, loss=FakeScalar(x), lr=3e-4, grad_norm=None)
        p.step(2, loss=0.1 + 0.2)
        records = read(self.metrics)
        self.assertEqual(records[0], {"step": 1, "loss": x, "lr": 3e-4})
        self.assertEqual(records[1]["loss"], 0.30000000000000004)

    def test_non_finite_values_become_strings_not_invalid_json(self):
        p = self.parity()
        p.step(1, loss=float("nan"), grad_norm=float("inf"))
        with open(self.metrics) as f:
            line = f.read()
        self.assertNotIn("NaN", line)
        self.assertEqual(json.loads(line), {"step": 1, "loss": "nan", "grad_norm": "inf"})

    def test_events_carry_digests_and_extras(self):
        p = self.parity()
        p.saved(5, digests={"params": "ab"}, micro_step=10, grad_accum=2)
        p.loaded(5, digests={"params": "ab"}, kind="native")
        saved, loaded = read(self.metrics)
        self.assertEqual(saved, {"event": "saved", "step": 5, "digests": {"params": "ab"}, "micro_step": 10,
                                 "grad_accum": 2})
        self.assertEqual(loaded["event"], "loaded")
        self.assertEqual(loaded["kind"], "native")

    def test_only_rank_zero_writes(self):
        p = self.parity(RANK="1")
        p.step(1, loss=1.0)
        self.assertFalse(os.path.exists(self.metrics))

    def test_no_metrics_file_writes_nothing(self):
        p = self.parity(PARITY_METRICS_FILE="")
        p.step(1, loss=1.0)
        self.assertFalse(os.path.exists(self.metrics))

    def test_mark_complete_writes_the_marker_atomically_on_rank_zero_only(self):
        tag = os.path.join(self.dir.name, "global_step5")
        os.makedirs(tag)
        self.assertIsNone(self.parity(RANK="1").mark_complete(tag, 5))
        self.assertEqual(os.listdir(tag), [])
        path = self.parity().mark_complete(tag, 5, digests={"params": "ab"}, world_size=2)
        self.assertEqual(path, os.path.join(tag, "parity_checkpoint_complete.json"))
        self.assertEqual(os.listdir(tag), ["parity_checkpoint_complete.json"], "no temporary file left")
        with open(path) as f:
            self.assertEqual(json.load(f), {"step": 5, "digests": {"params": "ab"}, "world_size": 2})

    def test_saved_step_comes_from_the_client_state(self):
        self.assertEqual(Parity.saved_step({"parity": {"step": 50, "rng": [], "data": None}}), 50)
        self.assertIsNone(Parity.saved_step({"parity": {"rng": []}}))
        self.assertIsNone(Parity.saved_step(None))

    def test_digests_are_sha256_prefixes_and_order_sensitive(self):
        self.assertEqual(digest_bytes([b"a", b"b"]), hashlib.sha256(b"ab").hexdigest()[:16])
        self.assertNotEqual(digest_bytes([b"a", b"b"]), digest_bytes([b"b", b"a"]))
        self.assertEqual(digest_json({"b": 1, "a": 2}), digest_json({"a": 2, "b": 1}))
        self.assertNotEqual(digest_json({"last_batch_iteration": 49}), digest_json({"last_batch_iteration": 50}))

    def test_component_names(self):
        self.assertEqual(DIGEST_COMPONENTS,
                         ("params", "exp_avg", "exp_avg_sq", "module_weights", "optimizer_step", "lr_scheduler",
                          "param_groups", "engine_counters", "loss_scaler", "rng", "data"))

    def test_events_carry_a_small_tensor_map_inline(self):
        p = self.parity(PARITY_RUN_DIR=os.path.dirname(self.metrics))
        tensors = {f"w{i} · params": "ab" for i in range(TENSORS_INLINE_MAX)}
        p.snapshot(5, digests={"params": "ab"}, tensors=tensors)
        (record,) = read(self.metrics)
        self.assertEqual(record["tensors"], tensors)
        self.assertNotIn("tensors_file", record)
        self.assertEqual(sorted(os.listdir(os.path.dirname(self.metrics))), ["metrics.jsonl"])

    def test_a_large_tensor_map_goes_to_a_sidecar_in_the_run_dir(self):
        run_dir = os.path.dirname(self.metrics)
        p = self.parity(PARITY_RUN_DIR=run_dir)
        tensors = {f"w{i} · expert 0 · exp_avg": f"{i:016x}" for i in range(TENSORS_INLINE_MAX + 1)}
        p.saved(50, digests={"params": "ab"}, tensors=tensors, micro_step=100)
        (record,) = read(self.metrics)
        self.assertEqual(record["tensors_file"], "tensors-saved-50.json")
        self.assertNotIn("tensors", record)
        self.assertEqual(record["micro_step"], 100)
        with open(os.path.join(run_dir, "tensors-saved-50.json")) as f:
            self.assertEqual(json.load(f), tensors)
        self.assertEqual(sorted(os.listdir(run_dir)), ["metrics.jsonl", "tensors-saved-50.json"],
                         "no temporary file left")

    def test_a_sidecar_outside_the_metrics_folder_is_written_beside_the_metrics(self):
        p = self.parity(PARITY_RUN_DIR=self.dir.name)  # the metrics file is in <dir>/sub
        p.loaded(50, digests={"params": "ab"}, tensors={f"w{i} · params": "ab" for i in range(300)})
        (record,) = read(self.metrics)
        self.assertEqual(record["tensors_file"], "tensors-loaded-50.json")
        self.assertTrue(os.path.exists(os.path.join(self.dir.name, "sub", "tensors-loaded-50.json")))

    def test_only_rank_zero_writes_a_sidecar(self):
        run_dir = os.path.dirname(self.metrics)
        self.parity(RANK="1", PARITY_RUN_DIR=run_dir).saved(
            5, digests={"params": "ab"}, tensors={f"w{i} · params": "ab" for i in range(300)})
        self.assertFalse(os.path.exists(run_dir))

    def test_metrics_writer_imports_with_the_standard_library_only(self):
        # A python that cannot import torch, numpy or deepspeed still writes metrics.
        code = ("import sys\n"
                "class Block:\n"
                "    def find_spec(self, name, path=None, target=None):\n"
                "        if name.split('.')[0] in ('torch', 'numpy', 'deepspeed'):\n"
                "            raise ImportError('blocked ' + name)\n"
                "sys.meta_path.insert(0, Block())\n"
                f"sys.path.insert(0, {HERE!r})\n"
                "from parity_adapter import Parity\n"
                f"Parity.from_env({{'PARITY_METRICS_FILE': {self.metrics!r}, 'PARITY_STEPS': '3'}}).step(1, loss=1.5)\n")
        subprocess.run([sys.executable, "-c", code], check=True)
        self.assertEqual(read(self.metrics), [{"step": 1, "loss": 1.5}])


if __name__ == "__main__":
    unittest.main()
