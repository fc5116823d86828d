"""Minimal reproducer: DeepSpeedCPUAdam does not continue bit for bit after a state_dict round trip
into a fresh optimizer (what every checkpoint resume does), because its C++ ``Adam_Optimizer`` keeps
the bias-correction powers beta1^t and beta2^t as a running float product while the step goes up
by one and recomputes them with ``std::pow`` (in double, rounded to float) when it sees any other
step — the first step of a fresh process after a load.

No distributed set-up, no model, no checkpoint files: one fp32 parameter, a fixed gradient sequence,
an uninterrupted run of N steps, and for every save step s a run that stops after s steps, moves
``state_dict()`` into a new ``DeepSpeedCPUAdam`` (a new C++ optimizer, as in a new process), and
continues. Exit status 1 when some resume differs (the bug), 0 when all are bit-identical.

    DS_ACCELERATOR=cpu .venv-deepspeed/bin/python adapters/deepspeed/repro/cpu_adam_beta_power.py
    ... --prime   # the workaround: replay steps 1..s through the C++ update after the load

DeepSpeed builds the ``cpu_adam`` op on first use (about 46 s; ninja must be on PATH).
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("DS_ACCELERATOR", "cpu")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from deepspeed.ops.adam import DeepSpeedCPUAdam  # noqa: E402

BETAS = (0.9, 0.95)


def make_optimizer(param: torch.nn.Parameter) -> DeepSpeedCPUAdam:
    return DeepSpeedCPUAdam([param], lr=1e-3, betas=BETAS, eps=1e-8, weight_decay=0.01, adamw_mode=True)


def prime(opt: DeepSpeedCPUAdam, steps: int) -> None:
    """Replays steps 1..steps through the C++ update on throw-away one-element tensors."""
    dummy = [torch.zeros(1) for _ in range(4)]
    for k in range(1, steps + 1):
        opt.ds_opt_adam.adam_update(opt.opt_id, k, 0.0, BETAS[0], BETAS[1], 1e-8, 0.0, True, *dummy)


def train(steps: int, grads: list, save_at: int | None = None, primed: bool = False) -> torch.Tensor:
    param = torch.nn.Parameter(torch.linspace(-1.0, 1.0, grads[0].numel()))
    opt = make_optimizer(param)
    for k in range(1, steps + 1):
        param.grad = grads[k - 1].clone()
        opt.step()
        if k == save_at:  # "save" and "resume in a fresh process"
            state = opt.state_dict()
            param = torch.nn.Parameter(param.detach().clone())
            opt = make_optimizer(param)
            opt.load_state_dict(state)
            if primed:
                prime(opt, k)
    return param.detach()


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--prime", action="store_true", help="apply the workaround after each load")
    a = p.parse_args(argv)
    g = torch.Generator().manual_seed(0)
    grads = [torch.randn(256, generator=g) for _ in range(a.steps)]
    reference = train(a.steps, grads)
    print("beta powers in float32: running product vs pow (what the C++ optimizer computes)")
    for beta in BETAS:
        run, differ = np.float32(1.0), []
        for n in range(1, a.steps + 1):
            run = np.float32(run * np.float32(beta))
            if run != np.float32(np.float64(np.float32(beta)) ** n):
                differ.append(n)
        print(f"  beta={beta}: product != pow at n = {differ}")
    bad = []
    for save_at in range(1, a.steps):
        resumed = train(a.steps, grads, save_at=save_at, primed=a.prime)
        if not torch.equal(resumed, reference):
            ulps = (resumed.view(torch.int32) - reference.view(torch.int32)).abs().max().item()
            bad.append(save_at)
            print(f"  save after step {save_at}: weights after step {a.steps} differ (max {ulps} ulp)")
    print(f"{len(bad)} of {a.steps - 1} resumes differ from the uninterrupted run"
          + (" (with --prime)" if a.prime else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
