"""parity_hooks.deepspeed's one-line hooks on a real DeepSpeed engine (one process, gloo):
``after_step`` snapshots and saves with the marker, ``resume`` loads, restores RNG and sampler,
reports ``loaded``, and the resumed steps are the uninterrupted run's, bit for bit."""

from __future__ import annotations

import os
import random
import sys
import tempfile

import pytest

os.environ.setdefault("DS_ACCELERATOR", "cpu")
# The op cache tools/setup_deepspeed.sh built into the venv (deepspeed_shm_comm).
os.environ.setdefault("TORCH_EXTENSIONS_DIR", os.path.join(sys.prefix, "torch_extensions"))

import deepspeed  # noqa: E402
import numpy  # noqa: E402
import torch  # noqa: E402
import torch.distributed as tdist  # noqa: E402

from conftest import read_jsonl  # noqa: E402
from parity_hooks import Contract  # noqa: E402
from parity_hooks.deepspeed import COMPLETE_MARKER, Parity  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def one_rank():
    if tdist.is_initialized():
        yield
        return
    # What torchrun would set for the one rank (deepspeed.initialize asserts LOCAL_RANK).
    before = {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    with tempfile.TemporaryDirectory() as tmp:
        deepspeed.init_distributed(dist_backend="gloo", init_method=f"file://{tmp}/rendezvous", rank=0,
                                   world_size=1, auto_mpi_discovery=False, verbose=False)
        yield
        tdist.destroy_process_group()
    for key, value in before.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


class Sampler:
    def __init__(self):
        self.position = 0

    def batch(self):
        x = torch.randn(8, 4, generator=torch.Generator().manual_seed(self.position))
        self.position += 1
        return x

    def state_dict(self):
        return {"position": self.position}

    def load_state_dict(self, state):
        self.position = state["position"]


def run(contract: Contract, **load_kwargs):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 1))
    config = {"train_batch_size": 8, "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "torch_adam": True}},
              "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": contract.steps,
                                                                "warmup_num_steps": 2}},
              "zero_optimization": {"stage": 1}, "steps_per_print": 10 ** 9}
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    random.seed(1)
    numpy.random.seed(1)
    torch.manual_seed(1)
    parity, sampler = Parity(contract), Sampler()
    first = parity.resume(engine, data=sampler, **load_kwargs)
    for step in range(first, parity.stop_at + 1):
        lr = engine.get_lr()[0]
        loss = engine(sampler.batch()).pow(2).mean()
        engine.backward(loss)
        engine.step()
        parity.step(step, loss=loss, lr=lr)
        parity.after_step(engine, step, data=sampler)
    return first


def test_resume_and_after_step_are_the_whole_contract(tmp_path):
    d = str(tmp_path)
    c = dict(steps=6, seed=1)
    assert run(Contract(stop_at=6, digest_at=3, metrics_file=f"{d}/base.jsonl", **c)) == 1
    run(Contract(stop_at=3, save_at=3, checkpoint_dir=f"{d}/ck", metrics_file=f"{d}/split.jsonl", **c))
    assert os.path.exists(f"{d}/ck/global_step3/{COMPLETE_MARKER}")
    first = run(Contract(stop_at=6, checkpoint_dir=f"{d}/ck", resume_from=f"{d}/ck/global_step3",
                         resume_kind="native", metrics_file=f"{d}/resume.jsonl", **c))
    assert first == 4
    base, split, resume = (read_jsonl(f"{d}/{n}.jsonl") for n in ("base", "split", "resume"))
    (snapshot,) = [r for r in base if r.get("event") == "snapshot"]
    (saved,) = [r for r in split if r.get("event") == "saved"]
    (loaded,) = [r for r in resume if r.get("event") == "loaded"]
    assert snapshot["digests"] == saved["digests"] == loaded["digests"]
    assert {"params", "exp_avg", "exp_avg_sq", "optimizer_step", "lr_scheduler", "param_groups", "engine_counters",
            "rng", "data"} == set(saved["digests"])
    assert (saved["micro_step"], saved["grad_accum"]) == (3, 1)
    # engine.step() zeroed the buffers at step 3's boundary, as a fresh engine's are.
    (base_grads,) = [r for r in base if r.get("event") == "grads"]
    (resume_grads,) = [r for r in resume if r.get("event") == "grads"]
    assert base_grads["step"] == resume_grads["step"] == 4
    assert base_grads["digests"] == resume_grads["digests"] and base_grads["framework"] == "deepspeed"
    losses = lambda rs: [(r["step"], r["loss"], r["lr"]) for r in rs if "loss" in r]  # noqa: E731
    assert losses(base) == losses(split) + losses(resume)


def test_a_fused_baseline_saves_at_n_and_trains_on(tmp_path):
    # schedule.split: fused: PARITY_SAVE_AT = PARITY_DIGEST_AT = 3 below PARITY_STOP_AT = 6.
    d = str(tmp_path)
    c = dict(steps=6, seed=1)
    run(Contract(stop_at=6, save_at=3, digest_at=3, checkpoint_dir=f"{d}/ck", metrics_file=f"{d}/base.jsonl", **c))
    assert os.path.exists(f"{d}/ck/global_step3/{COMPLETE_MARKER}")
    run(Contract(stop_at=6, checkpoint_dir=f"{d}/ck", resume_from=f"{d}/ck/global_step3", resume_kind="native",
                 metrics_file=f"{d}/resume.jsonl", **c))
    base, resume = (read_jsonl(f"{d}/{n}.jsonl") for n in ("base", "resume"))
    # The grads event of step 4 (issue 35) is digested right after step 3, before the save.
    events = [(r["event"], r["step"]) for r in base if "event" in r]
    assert events == [("snapshot", 3), ("grads", 4), ("saved", 3), ("after_save", 3)]
    snapshot, saved, after = [r for r in base if r.get("event") in ("snapshot", "saved", "after_save")]
    (loaded,) = [r for r in resume if r.get("event") == "loaded"]
    assert snapshot["digests"] == saved["digests"] == after["digests"] == loaded["digests"]
    losses = lambda rs: [(r["step"], r["loss"], r["lr"]) for r in rs if "loss" in r]  # noqa: E731
    assert losses(base)[3:] == losses(resume)


def test_a_resume_without_optimizer_states_names_the_moments(tmp_path):
    d = str(tmp_path)
    c = dict(steps=6, seed=1)
    run(Contract(stop_at=3, save_at=3, checkpoint_dir=f"{d}/ck", metrics_file=f"{d}/split.jsonl", **c))
    run(Contract(stop_at=4, resume_from=f"{d}/ck/global_step3", metrics_file=f"{d}/resume.jsonl", **c),
        load_optimizer_states=False)
    (saved,) = [r for r in read_jsonl(f"{d}/split.jsonl") if r.get("event") == "saved"]
    (loaded,) = [r for r in read_jsonl(f"{d}/resume.jsonl") if r.get("event") == "loaded"]
    differ = {k for k in saved["digests"] if saved["digests"][k] != loaded["digests"].get(k)}
    assert {"exp_avg", "exp_avg_sq", "optimizer_step"} <= differ
    assert "rng" not in differ and "data" not in differ
