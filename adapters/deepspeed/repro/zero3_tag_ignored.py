"""Minimal reproducer of DeepSpeed issue #8499: under ZeRO-3,
``engine.load_checkpoint(dir, tag=X, load_optimizer_states=False)`` loads the weights of the tag
that ``dir/latest`` names, not of ``X`` (engine.py ``_load_checkpoint`` calls
``get_fp32_state_dict_from_zero_checkpoint(load_dir)`` without the tag).

One process (gloo, world size 1), a two-Linear model, ZeRO-3, ``torch_adam: true``: 6 steps with
a save after step 3 (``global_step3``) and after step 6 (``global_step6``; ``latest`` names it);
then a fresh engine loads ``global_step3`` without optimizer states and its weights are compared
with the ones saved at 3 and at 6. A second fresh engine loads the same tag with optimizer states
(the control: correct). Exit status 1 when the tag is ignored (the bug), else 0.

    DS_ACCELERATOR=cpu .venv-deepspeed/bin/python adapters/deepspeed/repro/zero3_tag_ignored.py
    ... --with-optimizer-states   # the control alone: the same load with optimizer states
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

os.environ.setdefault("DS_ACCELERATOR", "cpu")
for key, value in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29519"), ("RANK", "0"), ("LOCAL_RANK", "0"),
                   ("WORLD_SIZE", "1")):
    os.environ.setdefault(key, value)

import deepspeed  # noqa: E402
import torch  # noqa: E402


def engine():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Linear(16, 4))
    config = {
        "train_batch_size": 2,
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "torch_adam": True}},
        "zero_optimization": {"stage": 3},
    }
    eng, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    return eng


def train_step(eng, k: int) -> None:
    g = torch.Generator().manual_seed(k)
    x, y = torch.randn(2, 16, generator=g), torch.randn(2, 4, generator=g)
    loss = torch.nn.functional.mse_loss(eng(x), y)
    eng.backward(loss)
    eng.step()


def weights(eng) -> dict[str, torch.Tensor]:
    """The full (gathered) module weights of a ZeRO-3 engine."""
    out = {}
    for name, p in eng.module.named_parameters():
        with deepspeed.zero.GatheredParameters([p]):
            out[name] = p.detach().clone().float()
    return out


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return all(torch.equal(a[k], b[k]) for k in a)


def load_and_compare(work: str, optimizer_states: bool, at3, at6) -> bool:
    """Loads tag global_step3 into a fresh engine; True when it holds the weights saved at 3."""
    eng = engine()
    eng.load_checkpoint(work, tag="global_step3", load_optimizer_states=optimizer_states)
    w = weights(eng)
    held = "step 3's" if same(w, at3) else "step 6's" if same(w, at6) else "neither"
    print(f"load_checkpoint(tag='global_step3', load_optimizer_states={optimizer_states}): "
          f"global_steps {eng.global_steps}, weights are {held}")
    return held == "step 3's"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--with-optimizer-states", action="store_true", help="run only the control load")
    a = p.parse_args(argv)
    deepspeed.init_distributed(dist_backend="gloo")
    work = tempfile.mkdtemp(prefix="z3-tag-ignored-")
    first = engine()
    for k in range(1, 4):
        train_step(first, k)
    first.save_checkpoint(work, tag="global_step3")
    at3 = weights(first)
    for k in range(4, 7):
        train_step(first, k)
    first.save_checkpoint(work, tag="global_step6")
    at6 = weights(first)
    with open(os.path.join(work, "latest")) as f:
        print(f"saved global_step3 and global_step6; latest names {f.read().strip()}")
    control = load_and_compare(work, True, at3, at6)
    if a.with_optimizer_states:
        return 0 if control else 1
    return 0 if load_and_compare(work, False, at3, at6) and control else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
