#!/usr/bin/env python3
"""A LightningModule trained by Lightning's Trainer, wired to the parity harness with one callback.

An MLP classifier with dropout, AdamW and a warm-up + cosine schedule sized by
``trainer.max_steps`` (PARITY_STEPS: the callback stops the phase at PARITY_STOP_AT without
shortening the schedule), on a shuffled DataLoader over a synthetic data set made from the seed
(6 batches per epoch, so the save at step 6 is an epoch boundary). ``ParityCallback`` writes the
metrics, saves and resumes through Lightning's own checkpoint, and reports the digests.

    .venv-hooks/bin/python examples/lightning/train.py [--fault restart-schedule]

--fault restart-schedule (a bug to catch): on load the LR scheduler's position is reset to 0, as
when a resume "starts a new schedule"; the harness names lr_scheduler.
"""

from __future__ import annotations

import argparse
import math

import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from parity_hooks.lightning import ParityCallback

FEATURES, CLASSES, SAMPLES, BATCH = 16, 4, 192, 32  # 6 batches per epoch


class Classifier(pl.LightningModule):
    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault
        self.net = nn.Sequential(nn.Linear(FEATURES, 64), nn.GELU(), nn.Dropout(0.2), nn.Linear(64, CLASSES))

    def training_step(self, batch, batch_idx):
        inputs, labels = batch
        return nn.functional.cross_entropy(self.net(inputs), labels)

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=3e-3, weight_decay=0.01)
        steps, warmup = self.trainer.max_steps, 3  # the full schedule, PARITY_STEPS
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * s / steps)))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}

    def on_load_checkpoint(self, checkpoint):
        if self.fault == "restart-schedule":
            for state in checkpoint["lr_schedulers"]:
                state["last_epoch"], state["_step_count"] = 0, 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fault", default="", choices=["", "restart-schedule"])
    fault = parser.parse_args().fault

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    parity = ParityCallback()
    seed = parity.seed if parity.seed is not None else 1
    data_rng = torch.Generator().manual_seed(seed)
    x = torch.randn(SAMPLES, FEATURES, generator=data_rng)
    y = (x @ torch.randn(FEATURES, CLASSES, generator=data_rng)).argmax(dim=1)
    pl.seed_everything(seed, verbose=False)  # python, numpy and torch: every generator digested
    loader = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True, drop_last=True)
    trainer = pl.Trainer(callbacks=[parity], accelerator="cpu", deterministic=True, **parity.trainer_kwargs())
    trainer.fit(Classifier(fault), loader, ckpt_path=parity.ckpt_path)


if __name__ == "__main__":
    main()
