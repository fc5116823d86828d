#!/usr/bin/env python3
"""A user's own small DeepSpeed script wired to the parity harness with parity_hooks.deepspeed.

A 2-layer MLP classifier with dropout, trained by ``deepspeed.initialize`` (ZeRO-1, bf16, AdamW,
WarmupDecayLR over the full schedule PARITY_STEPS) on one CPU rank over gloo, launched by torchrun.
Three calls make it speak the contract: ``Parity.from_env()``, ``parity.resume(...)`` and
``parity.after_step(...)`` (plus ``parity.step`` for the metrics).

    DS_ACCELERATOR=cpu .venv-hooks/bin/torchrun --standalone --nproc-per-node 1 \\
        examples/deepspeed_script/train.py [--fault no-optimizer-states]

--fault no-optimizer-states (a bug to catch): the resume calls ``load_checkpoint`` with
``load_optimizer_states=False``, DeepSpeed's own option, so Adam's moments and step restart; the
harness names exp_avg, exp_avg_sq and optimizer_step.
"""

from __future__ import annotations

import argparse
import os
import random
import sys

os.environ.setdefault("DS_ACCELERATOR", "cpu")
# DeepSpeed's JIT ops (deepspeed_shm_comm, which a CPU launch loads) were built into the venv by
# tools/setup_deepspeed.sh; one cache per venv.
os.environ.setdefault("TORCH_EXTENSIONS_DIR", os.path.join(sys.prefix, "torch_extensions"))

import numpy  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from parity_hooks.deepspeed import Parity  # noqa: E402

FEATURES, CLASSES, SAMPLES, BATCH = 16, 4, 192, 32


class Sampler:
    """The data position: the next sample of an endless stream that reshuffles every epoch with a
    generator seeded by (seed, epoch)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, seed: int) -> None:
        self.x, self.y, self.seed, self.position = x, y, seed, 0

    def next_batch(self) -> tuple:
        epoch, offset = divmod(self.position, len(self.x))
        order = torch.randperm(len(self.x), generator=torch.Generator().manual_seed(self.seed * 1000 + epoch))
        idx = order[offset:offset + BATCH]
        self.position += BATCH
        return self.x[idx], self.y[idx]

    def state_dict(self) -> dict:
        return {"position": self.position}

    def load_state_dict(self, state: dict) -> None:
        self.position = int(state["position"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fault", default="", choices=["", "no-optimizer-states"])
    parser.add_argument("--zero-stage", type=int, default=1, choices=[0, 1])
    parser.add_argument("--precision", default="bf16", choices=["bf16", "fp32"])
    a = parser.parse_args()

    import deepspeed

    deepspeed.init_distributed(dist_backend="gloo")
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    parity = Parity.from_env()
    seed = parity.seed if parity.seed is not None else 1
    data_rng = torch.Generator().manual_seed(seed)
    x = torch.randn(SAMPLES, FEATURES, generator=data_rng)
    y = (x @ torch.randn(FEATURES, CLASSES, generator=data_rng)).argmax(dim=1)
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.GELU(), nn.Dropout(0.2), nn.Linear(64, CLASSES))
    config = {
        "train_batch_size": BATCH,
        "train_micro_batch_size_per_gpu": BATCH,
        "gradient_accumulation_steps": 1,
        "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.01, "torch_adam": True}},
        "scheduler": {"type": "WarmupDecayLR",
                      "params": {"total_num_steps": parity.steps, "warmup_num_steps": 3, "warmup_max_lr": 3e-3}},
        "gradient_clipping": 1.0,
        "zero_optimization": {"stage": a.zero_stage},
        "bf16": {"enabled": a.precision == "bf16"},
        "steps_per_print": 10 ** 9,
    }
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    # Every generator the rng digest hashes starts from the seed.
    random.seed(seed + 1)
    numpy.random.seed(seed + 1)
    torch.manual_seed(seed + 1)
    sampler = Sampler(x, y, seed)

    load = {"load_optimizer_states": False} if a.fault == "no-optimizer-states" else {}
    first = parity.resume(engine, data=sampler, **load)
    for step in range(first, parity.stop_at + 1):
        inputs, labels = sampler.next_batch()
        lr = engine.get_lr()[0]  # the LR this step uses
        logits = engine(inputs.to(engine.device, dtype=torch.bfloat16 if a.precision == "bf16" else torch.float32))
        loss = nn.functional.cross_entropy(logits.float(), labels.to(engine.device))
        engine.backward(loss)
        engine.step()
        parity.step(step, loss=loss, lr=lr, grad_norm=engine.get_global_grad_norm())
        parity.after_step(engine, step, data=sampler)
    deepspeed.comm.barrier()
    deepspeed.comm.destroy_process_group()


if __name__ == "__main__":
    main()
