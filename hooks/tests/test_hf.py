"""parity_hooks.hf on the real transformers.Trainer: the repository's run_clm-style test script
(test/trainers/hf_clm/train_clm.py) run unmodified through ``python -m parity_hooks.hf``."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Dict, List, Optional

from conftest import HOOKS, read_jsonl
from parity_hooks._hf_state import DataPosition

REPO = os.path.dirname(HOOKS)
SCRIPT = os.path.join(REPO, "test", "trainers", "hf_clm", "train_clm.py")
CORPUS = os.path.join(REPO, "test", "fixtures", "hf_clm", "corpus.txt")


def test_data_position_counts_an_epoch_end_as_the_next_epoch():
    position = DataPosition()
    position.start_epoch(0, batches_per_epoch=4, updates_per_epoch=2)
    position.skipped(2)
    assert position.view(7) == {"epoch": 0, "batches": 2, "sampler_seed": 7}
    position.consumed(2)
    assert position.view(7) == {"epoch": 1, "batches": 0, "sampler_seed": 7}


def test_the_launcher_refuses_a_missing_script(tmp_path):
    run = subprocess.run([sys.executable, "-m", "parity_hooks.hf", str(tmp_path / "nope.py")],
                         capture_output=True, text=True, cwd=HOOKS)
    assert run.returncode == 2
    assert "no such script" in run.stderr


def _phase(tmp: str, phase: str, stop: int, save: Optional[int] = None, digest: Optional[int] = None,
           resume: Optional[str] = None, extra: Optional[List[str]] = None,
           batch: int = 4) -> List[Dict]:
    folder = os.path.join(tmp, phase)
    metrics = os.path.join(folder, "metrics.jsonl")
    env = dict(os.environ, PARITY_PHASE=phase, PARITY_STEPS="6", PARITY_STOP_AT=str(stop),
               PARITY_SAVE_AT=str(save or ""), PARITY_DIGEST_AT=str(digest or ""),
               PARITY_RESUME_FROM=resume or "", PARITY_METRICS_FILE=metrics, OMP_NUM_THREADS="1",
               HF_HUB_OFFLINE="1", PYTHONPATH=HOOKS)
    argv = [sys.executable, "-m", "parity_hooks.hf", SCRIPT, "--train_file", CORPUS,
            "--per_device_train_batch_size", str(batch), "--learning_rate", "1e-3", "--use_cpu", "true",
            "--disable_tqdm", "true", "--max_steps", "6", "--seed", "3", "--output_dir",
            os.path.join(folder, "out")]
    if resume:
        argv += ["--resume_from_checkpoint", resume]
    run = subprocess.run(argv + (extra or []), capture_output=True, text=True, env=env, cwd=folder
                         if os.path.isdir(folder) else tmp)
    assert run.returncode == 0, run.stderr[-3000:]
    return read_jsonl(metrics)


def _event(records: List[Dict], kind: str) -> Dict:
    return next(r for r in records if r.get("event") == kind)


def test_a_native_resume_continues_bit_for_bit_and_a_lost_rng_is_named(tmp_path):
    tmp = str(tmp_path)
    baseline = _phase(tmp, "baseline", 6, digest=3)
    split = _phase(tmp, "split", 3, save=3)
    tag = os.path.join(tmp, "split", "out", "checkpoint-3")
    assert os.path.isfile(os.path.join(tag, "parity_checkpoint_complete.json"))
    steps = [r["step"] for r in split if "event" not in r]
    assert steps == [1, 2, 3], "the split stops at PARITY_STOP_AT"
    saved = _event(split, "saved")["digests"]
    assert saved == _event(baseline, "snapshot")["digests"], "the save holds the baseline's state"

    resume = _phase(tmp, "resume", 6, resume=tag)
    assert _event(resume, "loaded")["digests"] == saved
    # At on_step_begin of step 4: HF zeroed the gradients after step 3's optimizer step.
    assert _event(resume, "grads")["step"] == _event(baseline, "grads")["step"] == 4
    assert _event(resume, "grads")["digests"] == _event(baseline, "grads")["digests"]
    losses = {r["step"]: r["loss"] for r in baseline if "event" not in r}
    assert {r["step"]: r["loss"] for r in resume if "event" not in r} == {
        s: losses[s] for s in (4, 5, 6)}

    lost = _phase(tmp, "lost", 6, resume=tag, extra=["--skip_rng_restore", "true"])
    loaded = _event(lost, "loaded")["digests"]
    assert [k for k in saved if saved[k] != loaded[k]] == ["rng"]
    assert next(r for r in lost if r.get("step") == 4 and "event" not in r)["loss"] != losses[4]


def test_a_resume_at_an_epoch_boundary_is_clean_and_ignore_data_skip_names_data(tmp_path):
    # 252 blocks of the corpus in batches of 84: 3 steps per epoch, so the save after step 3 ends
    # epoch 0. HF restores the RNG there before the next epoch's iterator draws its base seed
    # from it, exactly as the uninterrupted run draws after step 3.
    tmp = str(tmp_path)
    baseline = _phase(tmp, "baseline", 6, digest=3, batch=84)
    split = _phase(tmp, "split", 3, save=3, batch=84)
    tag = os.path.join(tmp, "split", "out", "checkpoint-3")
    saved = _event(split, "saved")["digests"]
    assert saved == _event(baseline, "snapshot")["digests"]
    resume = _phase(tmp, "resume", 6, resume=tag, batch=84)
    assert _event(resume, "loaded")["digests"] == saved
    losses = {r["step"]: r["loss"] for r in baseline if "event" not in r}
    assert {r["step"]: r["loss"] for r in resume if "event" not in r} == {
        s: losses[s] for s in (4, 5, 6)}
    # Mid-epoch, --ignore_data_skip restarts the epoch: the data position differs, the RNG HF
    # restored does not.
    mid = _phase(tmp, "mid-split", 2, save=2, batch=84)
    ids = _phase(tmp, "ids", 6, resume=os.path.join(tmp, "mid-split", "out", "checkpoint-2"),
                 batch=84, extra=["--ignore_data_skip", "true"])
    mid_saved = _event(mid, "saved")["digests"]
    loaded = _event(ids, "loaded")["digests"]
    assert [k for k in mid_saved if mid_saved[k] != loaded[k]] == ["data"]
