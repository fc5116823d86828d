"""The optimizers ``train_moe.py --optimizer`` selects, and the workaround for CPU-Adam's resume
difference (docs/deepspeed.md, "CPU-Adam's bias correction after a resume").

``torch_adamw``  DeepSpeed's ``AdamW`` with ``torch_adam: true``: torch's own AdamW, no compiled op
``cpu_adam``     DeepSpeed's ``AdamW`` without ``torch_adam`` under ZeRO offload of the optimizer to
                 CPU: ``DeepSpeedCPUAdam``, the C++ op (``cpu_adam``, JIT-built once per machine;
                 ``tools/setup_deepspeed.sh`` builds it) — the seed run's optimizer
"""

from __future__ import annotations

from typing import Any, Dict, List

OPTIMIZERS = ("torch_adamw", "cpu_adam")


def optimizer_config(name: str, lr: float) -> Dict[str, Any]:
    """The ``optimizer`` entry of the DeepSpeed config. Hyper-parameters are the same for both."""
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; expected one of {OPTIMIZERS}")
    params: Dict[str, Any] = {"lr": lr, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.01}
    if name == "torch_adamw":
        params["torch_adam"] = True
    return {"type": "AdamW", "params": params}


def cpu_adam_instances(engine: Any) -> List[Any]:
    """The ``DeepSpeedCPUAdam`` optimizers below the engine's ZeRO wrappers (none for torch AdamW)."""
    from deepspeed.ops.adam import DeepSpeedCPUAdam

    out, opt, seen = [], engine.optimizer, set()
    while opt is not None and id(opt) not in seen:
        seen.add(id(opt))
        if isinstance(opt, DeepSpeedCPUAdam):
            out.append(opt)
            break
        opt = getattr(opt, "optimizer", None)
    return out


def prime_cpu_adam(engine: Any, step: int) -> int:
    """Workaround: replay steps ``1..step`` through each C++ Adam optimizer's update on dummy
    one-element tensors right after ``load_checkpoint``.

    The C++ ``Adam_Optimizer::IncrementStep`` keeps β₁ᵗ and β₂ᵗ as a running product while the step
    goes up by one (an uninterrupted run) and recomputes them with ``std::pow`` when it sees any
    other step (the first step of a fresh process after a load). In float32 the two differ by an
    ulp for some step counts, so the bias correction — and from there the weights — of a resumed run
    differ from the uninterrupted one. Replaying the steps builds the same running product; the
    dummy tensors are thrown away and no real state is touched. Returns the optimizers primed."""
    import torch

    primed = cpu_adam_instances(engine)
    for opt in primed:
        group = opt.param_groups[0]
        beta1, beta2 = group["betas"]
        p, g, m, v = (torch.zeros(1, dtype=torch.float32) for _ in range(4))
        for k in range(1, step + 1):
            opt.ds_opt_adam.adam_update(opt.opt_id, k, 0.0, beta1, beta2, group["eps"], 0.0,
                                        group["bias_correction"], p, g, m, v)
    return len(primed)


def scale_lr_on_resume(engine: Any, factor: float) -> None:
    """A calibration resume (``--lr-scale-on-resume``, the harness's ``PARITY_LR_SCALE``): every
    LR the resumed process applies — the one restored for the first resumed step and each the
    scheduler sets afterwards — is multiplied by ``factor``. ``engine.get_lr()`` reads the scaled
    values, so the logged ``lr`` shows the error and the harness can verify it took effect."""
    for group in engine.optimizer.param_groups:
        group["lr"] *= factor
    scheduler = getattr(engine, "lr_scheduler", None)
    if scheduler is None:
        return
    unscaled = scheduler.get_lr
    # An instance attribute: the scheduler's step() sets each group's lr from self.get_lr().
    scheduler.get_lr = lambda: [lr * factor for lr in unscaled()]

