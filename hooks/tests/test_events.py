"""Parity: full-precision JSONL records, events, the sidecar above 256 tensors, the marker."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import HOOKS, read_jsonl
from parity_hooks import COMPLETE_MARKER, TENSORS_INLINE_MAX, Parity


class FakeScalar:
    """Something with .item(), like a tensor or numpy scalar."""

    def __init__(self, value):
        self.value = value

    def item(self):
        return self.value


def parity(metrics, **env):
    base = {"PARITY_METRICS_FILE": metrics, "PARITY_STEPS": "10", "PARITY_PHASE": "split",
            "PARITY_STOP_AT": "5", "PARITY_SAVE_AT": "5", "PARITY_SEED": "7", "PARITY_CHECKPOINT_DIR": "/ck",
            "RANK": "0"}
    base.update(env)
    return Parity.from_env(base)


def test_the_contract_is_reachable_from_parity(metrics):
    p = parity(metrics, PARITY_RESUME_KIND="native", PARITY_RUN_DIR="/run", PARITY_DIGEST_AT="3")
    assert (p.steps, p.stop_at, p.save_at, p.seed, p.digest_at) == (10, 5, 5, 7, 3)
    assert (p.checkpoint_dir, p.resume_kind, p.run_dir, p.phase) == ("/ck", "native", "/run", "split")
    assert p.contract.metrics_file == metrics


def test_when_to_snapshot_save_and_stop(metrics):
    p = parity(metrics, PARITY_DIGEST_AT="3")
    assert [s for s in range(1, 11) if p.should_snapshot(s)] == [3]
    assert [s for s in range(1, 11) if p.should_save(s)] == [5]
    assert [s for s in range(1, 11) if p.should_stop(s)] == [5, 6, 7, 8, 9, 10]
    baseline = parity(metrics, PARITY_SAVE_AT="", PARITY_STOP_AT="")
    assert not any(baseline.should_save(s) or baseline.should_snapshot(s) for s in range(1, 11))


def test_first_step_follows_the_loaded_event(metrics):
    p = parity(metrics)
    assert p.first_step() == 1
    p.loaded(5, digests={"params": "ab"})
    assert p.first_step() == 6


def test_step_records_are_full_precision(metrics):
    p = parity(metrics)
    x = 2.7182818284590451
    p.step(1, loss=FakeScalar(x), lr=3e-4, grad_norm=None)
    p.step(2, loss=0.1 + 0.2)
    records = read_jsonl(metrics)
    assert records[0] == {"step": 1, "loss": x, "lr": 3e-4}
    assert records[1]["loss"] == 0.30000000000000004


def test_non_finite_values_become_strings_not_invalid_json(metrics):
    parity(metrics).step(1, loss=float("nan"), grad_norm=float("inf"))
    with open(metrics) as f:
        line = f.read()
    assert "NaN" not in line
    assert json.loads(line) == {"step": 1, "loss": "nan", "grad_norm": "inf"}


def test_events_carry_digests_and_extras(metrics):
    p = parity(metrics)
    p.saved(5, digests={"params": "ab"}, micro_step=10, grad_accum=2)
    p.loaded(5, digests={"params": "ab"}, kind="native")
    p.snapshot(5, {"params": "ab"})
    saved, loaded, snapshot = read_jsonl(metrics)
    assert saved == {"event": "saved", "step": 5, "digests": {"params": "ab"}, "micro_step": 10, "grad_accum": 2}
    assert (loaded["event"], loaded["kind"]) == ("loaded", "native")
    assert snapshot == {"event": "snapshot", "step": 5, "digests": {"params": "ab"}}


def test_only_rank_zero_writes(metrics):
    parity(metrics, RANK="1").step(1, loss=1.0)
    assert not os.path.exists(metrics)


def test_no_metrics_file_writes_nothing(metrics):
    parity(metrics, PARITY_METRICS_FILE="").step(1, loss=1.0)
    assert not os.path.exists(metrics)


def test_mark_complete_writes_the_marker_atomically_on_rank_zero_only(metrics, tmp_path):
    tag = str(tmp_path / "global_step5")
    os.makedirs(tag)
    assert parity(metrics, RANK="1").mark_complete(tag, 5) is None
    assert os.listdir(tag) == []
    path = parity(metrics).mark_complete(tag, 5, digests={"params": "ab"}, world_size=2)
    assert path == os.path.join(tag, COMPLETE_MARKER) and COMPLETE_MARKER == "parity_checkpoint_complete.json"
    assert os.listdir(tag) == [COMPLETE_MARKER], "no temporary file left"
    with open(path) as f:
        assert json.load(f) == {"step": 5, "digests": {"params": "ab"}, "world_size": 2}


def test_events_carry_a_small_tensor_map_inline(metrics):
    p = parity(metrics, PARITY_RUN_DIR=os.path.dirname(metrics))
    tensors = {f"w{i} · params": "ab" for i in range(TENSORS_INLINE_MAX)}
    p.snapshot(5, digests={"params": "ab"}, tensors=tensors)
    (record,) = read_jsonl(metrics)
    assert record["tensors"] == tensors and "tensors_file" not in record
    assert sorted(os.listdir(os.path.dirname(metrics))) == ["metrics.jsonl"]


def test_a_large_tensor_map_goes_to_a_sidecar_in_the_run_dir(metrics):
    run_dir = os.path.dirname(metrics)
    p = parity(metrics, PARITY_RUN_DIR=run_dir)
    tensors = {f"w{i} · expert 0 · exp_avg": f"{i:016x}" for i in range(TENSORS_INLINE_MAX + 1)}
    p.saved(50, digests={"params": "ab"}, tensors=tensors, micro_step=100)
    (record,) = read_jsonl(metrics)
    assert record["tensors_file"] == "tensors-saved-50.json" and "tensors" not in record
    assert record["micro_step"] == 100
    with open(os.path.join(run_dir, "tensors-saved-50.json")) as f:
        assert json.load(f) == tensors
    assert sorted(os.listdir(run_dir)) == ["metrics.jsonl", "tensors-saved-50.json"], "no temporary file left"


def test_a_sidecar_outside_the_metrics_folder_is_written_beside_the_metrics(metrics, tmp_path):
    p = parity(metrics, PARITY_RUN_DIR=str(tmp_path))  # the metrics file is in <tmp>/sub
    p.loaded(50, digests={"params": "ab"}, tensors={f"w{i} · params": "ab" for i in range(300)})
    (record,) = read_jsonl(metrics)
    assert record["tensors_file"] == "tensors-loaded-50.json"
    assert os.path.exists(os.path.join(str(tmp_path), "sub", "tensors-loaded-50.json"))


def test_only_rank_zero_writes_a_sidecar(metrics):
    run_dir = os.path.dirname(metrics)
    parity(metrics, RANK="1", PARITY_RUN_DIR=run_dir).saved(
        5, digests={"params": "ab"}, tensors={f"w{i} · params": "ab" for i in range(300)})
    assert not os.path.exists(run_dir)


def test_the_core_imports_with_the_standard_library_only(metrics):
    # A python that cannot import torch, numpy or any framework still writes metrics.
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('torch', 'numpy', 'deepspeed', 'lightning', 'transformers'):\n"
            "            raise ImportError('blocked ' + name)\n"
            "sys.meta_path.insert(0, Block())\n"
            f"sys.path.insert(0, {HOOKS!r})\n"
            "from parity_hooks import Parity\n"
            f"Parity.from_env({{'PARITY_METRICS_FILE': {metrics!r}, 'PARITY_STEPS': '3'}}).step(1, loss=1.5)\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert read_jsonl(metrics) == [{"step": 1, "loss": 1.5}]
