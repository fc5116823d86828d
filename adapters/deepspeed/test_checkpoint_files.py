"""Tests of checkpoint_files.py: on files written here by torch.save (no engine), and on real tiny
checkpoints saved by DeepSpeed (the venv's release) through train_moe.py on 2 CPU ranks — dense
ZeRO-3, AutoEP ZeRO-2 and ZeRO-3, and their universal folders from ``ds_to_universal`` — where
the files' digests must equal the engine's ``saved`` digests component by component and tensor
by tensor:

    .venv-deepspeed/bin/python -m pytest adapters/deepspeed/test_checkpoint_files.py

The end-to-end proof on a buggy and a fixed release is test/deepspeed_known_bugs_test.ts.
"""

import json
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace
from typing import Any, Dict

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checkpoint_files import CheckpointFiles, UnreadableCheckpoint  # noqa: E402
from zero_shards import fragments_of, zero3_parameters  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _model_states(optimizer: Any, stage: int = 0) -> Dict[str, Any]:
    return {"module": {"a": torch.ones(2, 2, dtype=torch.bfloat16), "b": torch.zeros(3, dtype=torch.bfloat16)},
            "buffer_names": [], "optimizer": optimizer, "lr_scheduler": {"last_batch_iteration": 4},
            "ds_config": {"zero_optimization": {"stage": stage}}, "ds_version": "test"}


def test_fragments_of_assembles_a_parameter_across_rank_partitions() -> None:
    flat = torch.arange(10, dtype=torch.float32)  # parameter "w" spans both partitions of 5
    parts = [flat[:5], flat[5:]]
    maps = [{"w": SimpleNamespace(start=2, numel=3)}, {"w": SimpleNamespace(start=0, numel=4)}]
    assert fragments_of(parts, maps, "w").tolist() == [2, 3, 4, 5, 6, 7, 8]
    assert fragments_of(parts, maps, "other") is None


def test_a_stage0_bf16_save_without_optimizer_state_has_it_absent(tmp_path: Any) -> None:
    torch.save(_model_states(None), tmp_path / "mp_rank_00_model_states.pt")
    doc = CheckpointFiles(str(tmp_path)).digests()
    assert doc["absent"] == ["params", "exp_avg", "exp_avg_sq", "optimizer_step", "param_groups"]
    assert set(doc["digests"]) == {"module_weights", "lr_scheduler"}
    assert set(doc["tensors"]) == {"a · module", "b · module"}


def test_a_stage0_bf16_save_with_fp32_groups_reads_master_and_moments(tmp_path: Any) -> None:
    masters = [torch.full((2, 2), 1.5), torch.full((3, ), 2.5)]
    state = {i: {"step": torch.tensor(5.0), "exp_avg": m * 0.1, "exp_avg_sq": m * 0.01} for i, m in enumerate(masters)}
    optimizer = {"fp32_groups": [masters], "optimizer_state_dict": {"state": state, "param_groups": [{"params": [0, 1]}]}}
    torch.save(_model_states(optimizer), tmp_path / "mp_rank_00_model_states.pt")
    doc = CheckpointFiles(str(tmp_path)).digests()
    assert doc["absent"] == []
    assert {"params", "exp_avg", "exp_avg_sq", "optimizer_step", "module_weights"} <= set(doc["digests"])
    # The master is read, not the bf16 module: their digests differ.
    assert doc["tensors"]["a · params"] != doc["tensors"]["a · module"]


def test_zero3_parameters_cuts_each_parameter_from_every_rank_partition() -> None:
    # Two parameters of 3 and 4 elements over 2 ranks: partitions of 2 each, padded at the end.
    a, b = torch.tensor([1., 2., 3.]), torch.tensor([4., 5., 6., 7.])
    flats = [torch.tensor([1., 2., 4., 5.]), torch.tensor([3., 0., 6., 7.])]
    got = dict(zero3_parameters(flats, [("a", [3]), ("b", [2, 2])]))
    assert got["a"].tolist() == a.tolist() and got["b"].tolist() == b.view(2, 2).tolist()


def test_a_folder_without_model_states_is_refused_naming_why(tmp_path: Any) -> None:
    with pytest.raises(UnreadableCheckpoint, match="no mp_rank_00_model_states.pt"):
        CheckpointFiles(str(tmp_path))


# -- real DeepSpeed checkpoints --------------------------------------------------------------------

#: name -> train_moe.py flags (2 CPU ranks, 1 layer, hidden 16, 3 steps, saved after step 2).
REAL = {"dense_z3": ["--model", "dense", "--zero-stage", "3"],
        "autoep_z2": ["--model", "moe", "--zero-stage", "2", "--autoep-size", "2"],
        "autoep_z3": ["--model", "moe", "--zero-stage", "3", "--autoep-size", "2"]}


@pytest.fixture(scope="module")
def real(tmp_path_factory: Any) -> Dict[str, Dict[str, Any]]:
    """Each REAL checkpoint: its tag folder, universal folder and the engine's ``saved`` event."""
    bin_dir = os.path.dirname(sys.executable)
    out: Dict[str, Dict[str, Any]] = {}
    for name, flags in REAL.items():
        run = str(tmp_path_factory.mktemp(name))
        env = dict(os.environ, DS_ACCELERATOR="cpu", OMP_NUM_THREADS="1")
        argv = [os.path.join(bin_dir, "torchrun"), "--standalone", "--nproc-per-node", "2",
                os.path.join(HERE, "train_moe.py"), "--steps", "3", "--save-at", "2", "--checkpoint-dir",
                os.path.join(run, "ckpt"), "--metrics-file", os.path.join(run, "metrics.jsonl"), "--out", run,
                "--precision", "bf16", "--grad-accum", "1", "--layers", "1", "--hidden", "16", "--ffn", "16",
                *flags]
        done = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout[-4000:]
        tag = os.path.join(run, "ckpt", "global_step2")
        universal = os.path.join(run, "universal")
        done = subprocess.run([sys.executable, "-m", "deepspeed.checkpoint.ds_to_universal", "--input_folder", tag,
                               "--output_folder", universal, "--num_extract_workers", "1",
                               "--num_merge_workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-4000:]
        with open(os.path.join(run, "metrics.jsonl")) as f:
            saved = [r for r in map(json.loads, f) if r.get("event") == "saved"]
        assert len(saved) == 1
        out[name] = {"tag": tag, "universal": universal, "saved": saved[0]}
    return out


def _read(folder: str) -> Dict[str, Any]:
    """The reader as the harness runs it: a process of its own, one JSON line on stdout."""
    done = subprocess.run([sys.executable, os.path.join(HERE, "checkpoint_files.py"), folder],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _assert_files_equal_engine(doc: Dict[str, Any], saved: Dict[str, Any], not_read: set) -> None:
    assert set(doc["not_read"]) == not_read
    assert doc["absent"] == []
    for component, digest in saved["digests"].items():
        if component in not_read:
            assert component not in doc["digests"], component  # never reported as equal
        else:
            assert doc["digests"][component] == digest, component
    readable = {k: v for k, v in saved["tensors"].items() if not k.endswith(" · module") or
                "module_weights" not in not_read}
    assert doc["tensors"] == readable


@pytest.mark.parametrize("name", sorted(REAL))
def test_a_real_tag_folder_digests_as_the_engine_saved_it(real: Dict[str, Dict[str, Any]], name: str) -> None:
    doc = _read(real[name]["tag"])
    zero3 = name.endswith("z3")
    _assert_files_equal_engine(doc, real[name]["saved"],
                               {"engine_counters", *(["module_weights"] if zero3 else [])})
    assert doc["layout"]["zero_stage"] == (3 if zero3 else 2) and doc["layout"]["optimizer_files"] == 2
    assert doc["layout"]["autoep"] == name.startswith("autoep")
    if name.startswith("autoep"):
        assert "model.layers.0.mlp.experts.w2 · expert 3 · exp_avg" in doc["tensors"]


@pytest.mark.parametrize("name", sorted(REAL))
def test_a_real_universal_folder_digests_as_the_saved_state(real: Dict[str, Dict[str, Any]], name: str) -> None:
    doc = _read(real[name]["universal"])
    _assert_files_equal_engine(doc, real[name]["saved"], {"engine_counters", "module_weights"})
    assert doc["layout"]["universal"] is True


def test_a_changed_expert_file_names_that_expert_only(real: Dict[str, Dict[str, Any]], tmp_path: Any) -> None:
    tag = str(tmp_path / "global_step2")
    shutil.copytree(real["autoep_z2"]["tag"], tag)
    path = os.path.join(tag, "layer_0_expert_3_mp_rank_00_model_states.pt")
    state = torch.load(path, weights_only=False)
    state["model.layers.0.mlp.experts.w1.3"][0, 0] += 1
    torch.save(state, path)
    doc, saved = _read(tag), real["autoep_z2"]["saved"]
    assert sorted(k for k in saved["digests"] if doc["digests"].get(k) != saved["digests"][k]) == [
        "engine_counters", "module_weights"]
    assert [k for k, v in saved["tensors"].items() if doc["tensors"][k] != v] == [
        "model.layers.0.mlp.experts.w1 · expert 3 · module"]


@pytest.mark.parametrize("name", ["autoep_z2", "autoep_z3"])
def test_the_plan_executor_reads_the_same_shards(real: Dict[str, Dict[str, Any]], name: str) -> None:
    # One reader, not two: the executor's per-EP-rank expert shards are the reader's logical
    # tensors at that rank's experts (both cut by zero_shards.py).
    from plan_executor import CheckpointTensors
    tag = real[name]["tag"]
    state = CheckpointFiles(tag).optimizer_state()
    assert state is not None
    shards = CheckpointTensors(tag)
    param = "model.layers.0.mlp.experts.w1"
    for ep_rank, experts in ((0, [0, 1]), (1, [2, 3])):
        for kind, executor_kind in (("params", "fp32"), ("exp_avg", "exp_avg"), ("exp_avg_sq", "exp_avg_sq")):
            assert torch.equal(shards.optimizer(param, ep_rank, executor_kind), state[param][kind][experts])
