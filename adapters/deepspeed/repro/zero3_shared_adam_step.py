"""Minimal reproducer: after a ZeRO-3 *universal* ``load_checkpoint``, every optimizer sub-group's
torch-Adam state holds the *same* ``step`` tensor (stage3.py assigns one ``state_step`` object to
every sub-group), and ``step()`` steps sub-groups one at a time, so that tensor advances once per
sub-group per optimizer step: the bias correction of the next step is wrong.

One process (gloo, world size 1), a two-Linear model, ZeRO-3 with a small ``sub_group_size`` so the
parameters fall into several sub-groups, ``torch_adam: true``: 3 steps, save, DeepSpeed's own
``ds_to_universal``, then a fresh engine loads the universal folder with
``checkpoint.load_universal`` and takes one step. Prints the sub-groups' step values and whether
their tensors are shared. Exit status 1 when the step is shared or wrong (the bug), else 0.

    DS_ACCELERATOR=cpu .venv-deepspeed/bin/python adapters/deepspeed/repro/zero3_shared_adam_step.py
    ... --unshare   # the workaround: give each sub-group its own copy after the load

DeepSpeedCPUAdam and FusedAdam keep an int step per sub-group and are not affected.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("DS_ACCELERATOR", "cpu")
for key, value in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29517"), ("RANK", "0"), ("LOCAL_RANK", "0"),
                   ("WORLD_SIZE", "1")):
    os.environ.setdefault(key, value)

import deepspeed  # noqa: E402
import torch  # noqa: E402


def engine(load_universal: bool):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Linear(16, 4))
    config = {
        "train_batch_size": 2,
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "torch_adam": True}},
        "zero_optimization": {"stage": 3, "sub_group_size": 100},
    }
    if load_universal:
        config["checkpoint"] = {"load_universal": True}
    eng, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    return eng


def train_step(eng, k: int) -> None:
    g = torch.Generator().manual_seed(k)
    x, y = torch.randn(2, 16, generator=g), torch.randn(2, 4, generator=g)
    loss = torch.nn.functional.mse_loss(eng(x), y)
    eng.backward(loss)
    eng.step()


def adam_steps(eng):
    state = eng.optimizer.optimizer.state
    steps = [s["step"] for s in state.values() if "step" in s]
    return [int(s) for s in steps], len({id(s) for s in steps}) < len(steps)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--unshare", action="store_true", help="apply the workaround after the load")
    a = p.parse_args(argv)
    deepspeed.init_distributed(dist_backend="gloo")
    work = tempfile.mkdtemp(prefix="z3-shared-step-")
    first = engine(load_universal=False)
    for k in range(1, 4):
        train_step(first, k)
    first.save_checkpoint(work, tag="global_step3")
    subprocess.run([sys.executable, "-m", "deepspeed.checkpoint.ds_to_universal", "--input_folder",
                    os.path.join(work, "global_step3"), "--output_folder", os.path.join(work, "universal"),
                    "--num_extract_workers", "1", "--num_merge_workers", "1"], check=True,
                   stdout=subprocess.DEVNULL)
    second = engine(load_universal=True)
    second.load_checkpoint(work, tag="universal")
    steps, shared = adam_steps(second)
    print(f"after the universal load: {len(steps)} sub-groups, Adam steps {steps}, shared tensor: {shared}")
    if a.unshare:
        state = second.optimizer.optimizer.state
        for s in state.values():
            s["step"] = s["step"].clone()
    train_step(second, 4)
    steps, shared = adam_steps(second)
    print(f"after one more step: Adam steps {steps} (expected all 4), shared tensor: {shared}")
    return 0 if steps and all(s == 4 for s in steps) and not shared else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
