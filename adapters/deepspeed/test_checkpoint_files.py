"""Tests of checkpoint_files.py on files written here by torch.save (no engine):

    .venv-deepspeed/bin/python -m pytest adapters/deepspeed/test_checkpoint_files.py

The end-to-end proof (the reader against real DeepSpeed saves, ZeRO 0/1/2, on a buggy and a fixed
release) is test/deepspeed_known_bugs_test.ts.
"""

import os
import sys
from types import SimpleNamespace
from typing import Any, Dict

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checkpoint_files import CheckpointFiles, UnreadableCheckpoint, fragments_of  # noqa: E402


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
    assert doc["absent"] == ["params", "exp_avg", "exp_avg_sq", "optimizer_step"]
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


def test_zero3_is_refused_naming_why(tmp_path: Any) -> None:
    torch.save(_model_states(None, stage=3), tmp_path / "mp_rank_00_model_states.pt")
    with pytest.raises(UnreadableCheckpoint, match="ZeRO-3"):
        CheckpointFiles(str(tmp_path))
