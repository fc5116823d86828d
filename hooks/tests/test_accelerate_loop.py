"""parity_hooks.torch on an Accelerate loop: the prepared wrappers digest like the plain objects,
and save_state / load_state (which carry the RNG) restore equal digests."""

from __future__ import annotations

import random

import numpy
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

from conftest import read_jsonl
from parity_hooks.torch import from_env


def setup(e):
    random.seed(2)
    numpy.random.seed(2)
    torch.manual_seed(2)
    accelerator = Accelerator(cpu=True)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    data = DataLoader(TensorDataset(torch.randn(32, 4, generator=torch.Generator().manual_seed(0))), batch_size=4)
    model, opt, sched, data = accelerator.prepare(model, opt, sched, data)
    return accelerator, model, opt, sched, data, from_env(model=model, optimizer=opt, scheduler=sched, env=e)


def train(accelerator, model, opt, sched, data, hook, steps):
    batches = iter(data)
    for step in range(hook.first_step(), steps + 1):
        (x,) = next(batches)
        loss = model(x).pow(2).mean()
        accelerator.backward(loss)
        opt.step()
        sched.step()
        opt.zero_grad()
        hook.step(step, loss, lr=opt.param_groups[0]["lr"])


def test_save_state_and_load_state_restore_equal_digests(tmp_path):
    d = str(tmp_path)
    e = {"PARITY_METRICS_FILE": f"{d}/m.jsonl", "PARITY_STEPS": "6"}
    accelerator, model, opt, sched, data, hook = setup(e)
    train(accelerator, model, opt, sched, data, hook, 3)
    accelerator.save_state(f"{d}/ckpt")
    hook.saved(3)
    accelerator, model, opt, sched, data, hook = setup(e)
    fresh, _ = hook.state()
    accelerator.load_state(f"{d}/ckpt")
    hook.loaded(3)
    (saved,), (loaded,) = ([r for r in read_jsonl(f"{d}/m.jsonl") if r.get("event") == kind]
                           for kind in ("saved", "loaded"))
    assert saved["digests"] == loaded["digests"]
    assert {"params", "exp_avg", "exp_avg_sq", "optimizer_step", "lr_scheduler", "rng"} <= set(saved["digests"])
    # Before the load the prepared optimizer is fresh: its moments are reported, as absent.
    assert fresh["exp_avg"] != saved["digests"]["exp_avg"] and fresh["params"] != saved["digests"]["params"]
    assert "0.weight · exp_avg" in saved["tensors"]
