"""parity_hooks.lightning: a real Lightning fit split at step 3 and resumed; stop, save, events."""

from __future__ import annotations

import math
import os

import pytest
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from conftest import read_jsonl
from parity_hooks import Parity
from parity_hooks.lightning import CHECKPOINT_FILE, ParityCallback

BATCHES = 3  # per epoch


class Module(pl.LightningModule):
    def __init__(self, restart_schedule=False):
        super().__init__()
        self.restart_schedule = restart_schedule
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 1))

    def training_step(self, batch, batch_idx):
        (x,) = batch
        return self.net(x).pow(2).mean()

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=1e-2)
        steps = self.trainer.max_steps
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / steps)))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    def on_load_checkpoint(self, checkpoint):
        if self.restart_schedule:
            for state in checkpoint["lr_schedulers"]:
                state["last_epoch"], state["_step_count"] = 0, 1


def fit(d, name, accumulate=1, **env):
    e = {"PARITY_METRICS_FILE": f"{d}/{name}.jsonl", "PARITY_STEPS": "6", "PARITY_SEED": "4",
         "PARITY_RUN_DIR": f"{d}/{name}", **env}
    restart = e.pop("restart", False)
    callback = ParityCallback(Parity.from_env(e))
    pl.seed_everything(4, verbose=False)
    data = TensorDataset(torch.randn(4 * BATCHES * accumulate, 4, generator=torch.Generator().manual_seed(0)))
    loader = DataLoader(data, batch_size=4, shuffle=True)
    trainer = pl.Trainer(callbacks=[callback], accelerator="cpu", accumulate_grad_batches=accumulate,
                         **callback.trainer_kwargs())
    trainer.fit(Module(restart), loader, ckpt_path=callback.ckpt_path)
    return trainer, read_jsonl(f"{d}/{name}.jsonl")


def events(records, kind):
    return [r for r in records if r.get("event") == kind]


def losses(records):
    return [(r["step"], r["loss"], r["lr"]) for r in records if "loss" in r]


def test_split_and_resume_are_the_uninterrupted_run(tmp_path):
    d = str(tmp_path)
    _, base = fit(d, "base", PARITY_DIGEST_AT="3")
    trainer, split = fit(d, "split", PARITY_STOP_AT="3", PARITY_SAVE_AT="3", PARITY_CHECKPOINT_DIR=f"{d}/ck")
    assert trainer.global_step == 3 and trainer.max_steps == 3, "stopped at PARITY_STOP_AT"
    tag = f"{d}/ck/global_step3"
    assert sorted(os.listdir(tag)) == [CHECKPOINT_FILE, "parity_checkpoint_complete.json"]
    _, resume = fit(d, "resume", PARITY_RESUME_FROM=tag, PARITY_RESUME_KIND="native")
    assert [s for s, _, _ in losses(base)] == [1, 2, 3, 4, 5, 6]
    assert losses(base) == losses(split) + losses(resume), "bit-identical losses and LRs"
    assert len({lr for _, _, lr in losses(base)}) == 6, "the schedule spans PARITY_STEPS in every phase"
    (snapshot,), (saved,), (loaded,) = events(base, "snapshot"), events(split, "saved"), events(resume, "loaded")
    assert snapshot["digests"] == saved["digests"] == loaded["digests"]
    assert {"params", "exp_avg", "exp_avg_sq", "optimizer_step", "param_groups", "lr_scheduler", "rng",
            "trainer_state"} == set(saved["digests"])
    assert loaded["step"] == 3 and "net.0.weight · exp_avg" in loaded["tensors"]
    # At on_before_backward of step 4, after Lightning's zero_grad: nothing carried over.
    (base_grads,), (resume_grads,) = events(base, "grads"), events(resume, "grads")
    assert base_grads["step"] == resume_grads["step"] == 4 and events(split, "grads") == []
    assert base_grads["digests"] == resume_grads["digests"] and "net.0.weight · grad" in base_grads["tensors"]
    assert not os.path.exists(os.path.join(os.getcwd(), "lightning_logs")), "nothing written outside the run"


def test_a_restarted_schedule_names_lr_scheduler(tmp_path):
    d = str(tmp_path)
    fit(d, "split", PARITY_STOP_AT="3", PARITY_SAVE_AT="3", PARITY_CHECKPOINT_DIR=f"{d}/ck")
    _, resume = fit(d, "resume", PARITY_RESUME_FROM=f"{d}/ck/global_step3", restart=True)
    (saved,), (loaded,) = events(read_jsonl(f"{d}/split.jsonl"), "saved"), events(resume, "loaded")
    assert [k for k in saved["digests"] if saved["digests"][k] != loaded["digests"][k]] == ["lr_scheduler"]


def test_one_record_per_optimizer_step_with_accumulation(tmp_path):
    _, records = fit(str(tmp_path), "acc", accumulate=2, PARITY_STEPS="4")
    assert [s for s, _, _ in losses(records)] == [1, 2, 3, 4]


def test_a_mid_epoch_save_with_a_plain_dataloader_warns(tmp_path):
    d = str(tmp_path)
    with pytest.warns(UserWarning, match="in the middle of an epoch"):
        fit(d, "split", PARITY_STOP_AT="2", PARITY_SAVE_AT="2", PARITY_CHECKPOINT_DIR=f"{d}/ck")
