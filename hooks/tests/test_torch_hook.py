"""parity_hooks.torch: a real loop split, saved and resumed in-process; events carry the digests."""

from __future__ import annotations

import os
import random

import numpy
import torch

from conftest import read_jsonl
from parity_hooks.torch import TorchParity, from_env, rng_state, set_rng_state


def env(metrics, **extra):
    return {"PARITY_METRICS_FILE": metrics, "PARITY_STEPS": "6", "PARITY_SEED": "3", **extra}


class Position:
    def __init__(self):
        self.i = 0

    def state_dict(self):
        return {"i": self.i}

    def load_state_dict(self, s):
        self.i = s["i"]


def run(e, forget_optimizer=False, zero="none"):
    """A dropout MLP with AdamW and a step LR schedule, the loop of the hook's docstring. ``zero``:
    how the loop zeroes (``none``: set_to_none, ``zeros``: set_to_none=False, ``forget``: never)."""
    random.seed(3)
    numpy.random.seed(3)
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    pos = Position()
    hook = from_env(model=model, optimizer=opt, scheduler=sched, data=pos, env=e)
    if hook.resume_from:
        ckpt = torch.load(os.path.join(hook.resume_from, "ckpt.pt"), weights_only=True)
        model.load_state_dict(ckpt["model"])
        if not forget_optimizer:
            opt.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["scheduler"])
        pos.load_state_dict(ckpt["data"])
        set_rng_state(ckpt["rng"])
        hook.loaded(ckpt["step"])
    for step in range(hook.first_step(), hook.stop_at + 1):
        x = torch.randn(5, 4, generator=torch.Generator().manual_seed(pos.i))
        pos.i += 1
        loss = model(x).pow(2).mean()
        lr = opt.param_groups[0]["lr"]
        if zero != "forget":
            opt.zero_grad(set_to_none=zero == "none")
        loss.backward()
        opt.step()
        sched.step()
        hook.step(step, loss, lr=lr)
        if hook.should_snapshot(step):
            hook.snapshot(step)
        if hook.should_save(step):
            tag = hook.contract.tag_dir(step)
            os.makedirs(tag)
            rng = rng_state()
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                        "data": pos.state_dict(), "rng": rng, "step": step}, os.path.join(tag, "ckpt.pt"))
            hook.saved(step, rng=rng)
            hook.mark_complete(tag, step)
    return hook


def test_a_clean_resume_reports_equal_digests_and_continues_bit_for_bit(tmp_path):
    d = str(tmp_path)
    run(env(f"{d}/base.jsonl", PARITY_DIGEST_AT="3"))
    run(env(f"{d}/split.jsonl", PARITY_STOP_AT="3", PARITY_SAVE_AT="3", PARITY_CHECKPOINT_DIR=f"{d}/ck"))
    assert os.path.exists(f"{d}/ck/global_step3/parity_checkpoint_complete.json")
    hook = run(env(f"{d}/resume.jsonl", PARITY_CHECKPOINT_DIR=f"{d}/ck", PARITY_RESUME_FROM=f"{d}/ck/global_step3",
                   PARITY_RESUME_KIND="native"))
    assert isinstance(hook, TorchParity) and hook.first_step() == 4
    base, split, resume = (read_jsonl(f"{d}/{n}.jsonl") for n in ("base", "split", "resume"))
    (snapshot,) = [r for r in base if r.get("event") == "snapshot"]
    (saved,) = [r for r in split if r.get("event") == "saved"]
    (loaded,) = [r for r in resume if r.get("event") == "loaded"]
    assert snapshot["digests"] == saved["digests"] == loaded["digests"]
    assert sorted(saved["digests"]) == ["data", "exp_avg", "exp_avg_sq", "lr_scheduler", "optimizer_step",
                                        "param_groups", "params", "rng"]
    assert "0.weight · exp_avg" in saved["tensors"]
    steps = lambda rs: [(r["step"], r["loss"], r["lr"]) for r in rs if "loss" in r]  # noqa: E731
    assert steps(base) == steps(split) + steps(resume)
    assert [s for s, _, _ in steps(resume)] == [4, 5, 6]


def test_a_forgotten_optimizer_shows_in_the_loaded_digests(tmp_path):
    d = str(tmp_path)
    run(env(f"{d}/split.jsonl", PARITY_STOP_AT="3", PARITY_SAVE_AT="3", PARITY_CHECKPOINT_DIR=f"{d}/ck"))
    run(env(f"{d}/resume.jsonl", PARITY_RESUME_FROM=f"{d}/ck/global_step3"), forget_optimizer=True)
    (saved,) = [r for r in read_jsonl(f"{d}/split.jsonl") if r.get("event") == "saved"]
    (loaded,) = [r for r in read_jsonl(f"{d}/resume.jsonl") if r.get("event") == "loaded"]
    differ = sorted(k for k in saved["digests"] if saved["digests"][k] != loaded["digests"][k])
    assert differ == ["exp_avg", "exp_avg_sq", "optimizer_step", "param_groups"]


def test_saved_hashes_the_rng_the_checkpoint_holds_not_the_running_one(tmp_path):
    hook = from_env(env=env(str(tmp_path / "m.jsonl")))
    held = rng_state()
    torch.rand(1)  # the save drew after capturing
    hook.saved(1, rng=held)
    hook.snapshot(1)
    saved, snapshot = read_jsonl(str(tmp_path / "m.jsonl"))
    assert saved["digests"]["rng"] != snapshot["digests"]["rng"]
    set_rng_state(held)
    hook.snapshot(2)
    assert read_jsonl(str(tmp_path / "m.jsonl"))[-1]["digests"]["rng"] == saved["digests"]["rng"]


def test_a_fused_baseline_reports_after_save_equal_to_its_snapshot(tmp_path):
    # schedule.split: fused: the baseline saves at 3 (PARITY_SAVE_AT = PARITY_DIGEST_AT) and trains on.
    metrics = str(tmp_path / "m.jsonl")
    run(env(metrics, PARITY_SAVE_AT="3", PARITY_DIGEST_AT="3", PARITY_CHECKPOINT_DIR=str(tmp_path / "ck")))
    events = [r for r in read_jsonl(metrics) if "event" in r]
    assert [(e["event"], e["step"]) for e in events] == [
        ("snapshot", 3), ("saved", 3), ("after_save", 3), ("grads", 4)]
    snapshot, saved, after, _ = events
    assert after["digests"] == snapshot["digests"] == saved["digests"]
    assert [r["step"] for r in read_jsonl(metrics) if "loss" in r] == [1, 2, 3, 4, 5, 6]


def test_a_save_that_draws_from_the_running_rng_shows_in_after_save(tmp_path):
    metrics = str(tmp_path / "m.jsonl")
    hook = from_env(env=env(metrics, PARITY_SAVE_AT="1", PARITY_DIGEST_AT="1", PARITY_CHECKPOINT_DIR="/ck"))
    hook.snapshot(1)
    held = rng_state()
    torch.rand(1)  # the save drew after capturing: the checkpoint is right, the run is not
    hook.saved(1, rng=held)
    snapshot, saved, after = read_jsonl(metrics)
    assert saved["digests"]["rng"] == snapshot["digests"]["rng"]
    assert after["event"] == "after_save" and after["digests"]["rng"] != snapshot["digests"]["rng"]
    # A separate split (no PARITY_DIGEST_AT in the saving process) reports no after_save.
    split = str(tmp_path / "split.jsonl")
    from_env(env=env(split, PARITY_SAVE_AT="1", PARITY_CHECKPOINT_DIR="/ck")).saved(1)
    assert [r["event"] for r in read_jsonl(split)] == ["saved"]


def _grads(path):
    return [r for r in read_jsonl(path) if r.get("event") == "grads"]


def _split_and_resume(d, zero):
    run(env(f"{d}/base.jsonl", PARITY_DIGEST_AT="3"), zero=zero)
    run(env(f"{d}/split.jsonl", PARITY_STOP_AT="3", PARITY_SAVE_AT="3", PARITY_CHECKPOINT_DIR=f"{d}/ck"), zero=zero)
    run(env(f"{d}/resume.jsonl", PARITY_RESUME_FROM=f"{d}/ck/global_step3"), zero=zero)
    (base,) = _grads(f"{d}/base.jsonl")
    (resume,) = _grads(f"{d}/resume.jsonl")
    assert _grads(f"{d}/split.jsonl") == []  # the split reports no step after its save
    assert base["step"] == resume["step"] == 4
    return base, resume


def test_the_gradient_buffers_at_the_first_resumed_step_equal_the_baselines_when_the_loop_zeroes(tmp_path):
    for zero in ("none", "zeros"):  # set_to_none or zeros: a fresh process's None digests alike
        base, resume = _split_and_resume(str(tmp_path / zero), zero)
        assert base["digests"] == resume["digests"] and list(base["digests"]) == ["grad_buffers"]
        assert "0.weight · grad" in base["tensors"]


def test_a_loop_that_forgets_zero_grad_carries_gradients_a_fresh_process_has_not(tmp_path):
    base, resume = _split_and_resume(str(tmp_path), "forget")
    assert base["digests"]["grad_buffers"] != resume["digests"]["grad_buffers"]
    differ = sorted(k for k in base["tensors"] if base["tensors"][k] != resume["tensors"][k])
    assert differ == ["0.bias · grad", "0.weight · grad", "2.bias · grad", "2.weight · grad"]


def test_the_grads_event_is_taken_before_the_first_backward_accumulates(tmp_path):
    """Taken at the first backward, after a zero_grad between forward and backward: a buffer
    filled before the step's zero_grad does not show, one left by the previous step does."""
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = from_env(model=model, optimizer=opt, env=env(str(tmp_path / "m.jsonl"), PARITY_DIGEST_AT="1"))
    model(torch.ones(1, 3)).sum().backward()
    hook.snapshot(1)  # arms the grads event of step 2
    loss = model(torch.ones(1, 3)).sum()
    opt.zero_grad()
    loss.backward()
    loss = model(torch.ones(1, 3)).sum()
    loss.backward()  # a second micro-batch: the event is written once
    hook.step(2, loss)
    (event,) = _grads(str(tmp_path / "m.jsonl"))
    clean = from_env(model=torch.nn.Linear(3, 1), env=env(str(tmp_path / "n.jsonl")))
    clean.grads(2)
    assert event["step"] == 2 and event["digests"] != {}
    assert [w for w in model.weight.grad.flatten().tolist()] == [2.0, 2.0, 2.0]
    (fresh,) = _grads(str(tmp_path / "n.jsonl"))
    assert fresh["digests"] == event["digests"]  # both empty: zero_grad ran before the backward
    assert hook._grad_hooks == []  # removed after the step
