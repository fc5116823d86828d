#!/usr/bin/env python3
"""A hand-written PyTorch training loop wired to the parity harness with parity_hooks.torch.

A small real model (an MLP classifier with dropout) trained with AdamW, a warm-up + cosine LR
schedule spanning the full schedule (PARITY_STEPS), and a shuffled DataLoader over a synthetic
data set made from the seed. The checkpoint is the loop's own (torch.save of model, optimizer,
scheduler, data position and RNG states); the hook adds the contract: full-precision metrics,
digests of what was saved and restored, and the completion marker.

    .venv-hooks/bin/python examples/torch_loop/train.py [--fault forget-optimizer|forget-zero-grad]

--fault forget-optimizer (a bug to catch): the resume restores the model but not the optimizer,
so AdamW's moments and step restart; the harness names exp_avg, exp_avg_sq and optimizer_step.

--fault forget-zero-grad (a bug of the loop itself, in every phase): the loop never zeroes the
gradients, so each backward adds onto every earlier step's. The uninterrupted run enters the step
after the save with gradients a fresh process does not have; the harness names grad_buffers.
"""

from __future__ import annotations

import argparse
import math
import os
import random

import numpy

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from parity_hooks.torch import from_env, rng_state, set_rng_state

FEATURES, CLASSES, SAMPLES, BATCH = 16, 4, 192, 32  # 6 batches per epoch


class Position:
    """Where the data stream stands: the epoch and the batches of it already consumed. Each
    epoch's shuffle comes from a generator seeded by (seed, epoch), so a position is enough to
    rebuild the stream."""

    def __init__(self) -> None:
        self.epoch, self.batch = 0, 0

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "batch": self.batch}

    def load_state_dict(self, state: dict) -> None:
        self.epoch, self.batch = int(state["epoch"]), int(state["batch"])


def batches(data: TensorDataset, seed: int, position: Position):
    """Batches from the position on, forever, epoch after epoch (the position advances)."""
    while True:
        order = torch.Generator().manual_seed(seed * 1000 + position.epoch)
        loader = DataLoader(data, batch_size=BATCH, shuffle=True, generator=order, drop_last=True)
        for i, batch in enumerate(loader):
            if i < position.batch:
                continue  # consumed before the checkpoint
            position.batch = i + 1
            yield batch
        position.epoch, position.batch = position.epoch + 1, 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fault", default="", choices=["", "forget-optimizer", "forget-zero-grad"])
    fault = parser.parse_args().fault

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    hook = from_env()
    seed = hook.seed if hook.seed is not None else 1
    data_rng = torch.Generator().manual_seed(seed)
    x = torch.randn(SAMPLES, FEATURES, generator=data_rng)
    y = (x @ torch.randn(FEATURES, CLASSES, generator=data_rng)).argmax(dim=1)
    # Every generator the rng digest hashes starts from the seed (python and numpy too, though this
    # loop draws only from torch's): an unseeded one differs between two runs of the same phase.
    random.seed(seed)
    numpy.random.seed(seed)
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.GELU(), nn.Dropout(0.2), nn.Linear(64, CLASSES))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    warmup = 3
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (
        1 + math.cos(math.pi * s / max(1, hook.steps))))
    position = Position()
    hook.track(model=model, optimizer=optimizer, scheduler=scheduler, data=position)

    if hook.resume_from:
        ckpt = torch.load(os.path.join(hook.resume_from, "checkpoint.pt"), weights_only=False)
        model.load_state_dict(ckpt["model"])
        if fault != "forget-optimizer":
            optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        position.load_state_dict(ckpt["data"])
        set_rng_state(ckpt["rng"])
        hook.loaded(ckpt["step"])

    stream = batches(TensorDataset(x, y), seed, position)
    model.train()
    for step in range(hook.first_step(), hook.stop_at + 1):
        inputs, labels = next(stream)
        lr = optimizer.param_groups[0]["lr"]  # the LR this step uses
        loss = nn.functional.cross_entropy(model(inputs), labels)
        if fault != "forget-zero-grad":
            optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        hook.step(step, loss, lr=lr)
        print(f"step {step} loss {loss.item():.4f}", flush=True)  # rounded, for people
        if hook.should_snapshot(step):
            hook.snapshot(step)
        if hook.should_save(step):
            tag = hook.contract.tag_dir(step)
            os.makedirs(tag, exist_ok=True)
            rng = rng_state()
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "data": position.state_dict(), "rng": rng,
                        "step": step}, os.path.join(tag, "checkpoint.pt"))
            hook.saved(step, rng=rng)
            hook.mark_complete(tag, step)


if __name__ == "__main__":
    main()
