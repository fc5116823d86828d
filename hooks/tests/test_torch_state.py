"""state_digests of a plain torch loop: component names, per-tensor entries, absent states."""

from __future__ import annotations

import torch

from parity_hooks._digest import SEP
from parity_hooks._torch_state import grad_buffer_digests, state_digests


def trained(steps=2, optimizer="adamw"):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    opt = (torch.optim.AdamW(model.parameters(), lr=1e-2) if optimizer == "adamw"
           else torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))
    for _ in range(steps):
        opt.zero_grad()
        model(torch.randn(5, 3)).pow(2).mean().backward()
        opt.step()
        sched.step()
    return model, opt, sched


def test_components_and_tensor_names_of_adamw():
    model, opt, sched = trained()
    digests, tensors = state_digests(model=model, optimizer=opt, scheduler=sched, data={"epoch": 0, "batch": 2},
                                     extra={"trainer_state": {"global_step": 2}})
    assert sorted(digests) == ["data", "exp_avg", "exp_avg_sq", "lr_scheduler", "optimizer_step", "param_groups",
                               "params", "rng", "trainer_state"]
    names = ["0.bias", "0.weight", "2.bias", "2.weight"]
    assert sorted(tensors) == sorted(f"{n}{SEP}{k}" for n in names for k in ("params", "exp_avg", "exp_avg_sq"))
    assert all(len(d) == 16 for d in [*digests.values(), *tensors.values()])


def test_equal_states_give_equal_digests_and_a_copy_restores_them():
    model, opt, sched = trained()
    model2, opt2, sched2 = trained(steps=0)
    model2.load_state_dict(model.state_dict())
    opt2.load_state_dict(opt.state_dict())
    sched2.load_state_dict(sched.state_dict())
    a = state_digests(model=model, optimizer=opt, scheduler=sched, rng=False)
    b = state_digests(model=model2, optimizer=opt2, scheduler=sched2, rng=False)
    assert a == b


def test_each_fault_names_its_component():
    model, opt, sched = trained()
    base, _ = state_digests(model=model, optimizer=opt, scheduler=sched, rng=False)

    def differing(**kw):
        digests, _ = state_digests(**{"model": model, "optimizer": opt, "scheduler": sched, "rng": False, **kw})
        return sorted(k for k in base if digests.get(k) != base[k])

    fresh_model, fresh_opt, fresh_sched = trained(steps=0)
    fresh_model.load_state_dict(model.state_dict())
    # The optimizer not restored: moments absent (not zeros), step counters empty, LR as configured.
    assert differing(model=fresh_model, optimizer=fresh_opt, scheduler=sched) == [
        "exp_avg", "exp_avg_sq", "optimizer_step", "param_groups"]
    fresh_opt.load_state_dict(opt.state_dict())
    assert differing(model=fresh_model, optimizer=fresh_opt, scheduler=sched) == []
    assert differing(model=fresh_model, optimizer=fresh_opt, scheduler=fresh_sched) == ["lr_scheduler"]
    opt.param_groups[0]["weight_decay"] = 0.0
    assert differing() == ["param_groups"]


def test_one_changed_moment_names_its_tensor():
    model, opt, _ = trained()
    _, before = state_digests(model=model, optimizer=opt, rng=False)
    opt.state[model[2].weight]["exp_avg"][0, 1] += 1e-6
    digests, after = state_digests(model=model, optimizer=opt, rng=False)
    assert [k for k in before if before[k] != after[k]] == [f"2.weight{SEP}exp_avg"]


def test_sgd_momentum_is_a_component_of_its_own():
    model, opt, _ = trained(optimizer="sgd")
    digests, tensors = state_digests(model=model, optimizer=opt, rng=False)
    assert "momentum_buffer" in digests and f"0.weight{SEP}momentum_buffer" in tensors
    fresh_model, fresh_opt, _ = trained(steps=0, optimizer="sgd")
    fresh, _ = state_digests(model=fresh_model, optimizer=fresh_opt, rng=False)
    assert "momentum_buffer" in fresh, "a fresh SGD with momentum still reports the component (absent)"


def test_rng_is_the_running_state_or_a_saved_one():
    from parity_hooks._rng import rng_state

    saved = rng_state()
    now, _ = state_digests(rng=True)
    assert state_digests(rng=saved)[0]["rng"] == now["rng"]
    torch.rand(1)
    assert state_digests(rng=True)[0]["rng"] != now["rng"]
    assert "rng" not in state_digests(rng=False)[0]


def test_grad_buffers_digest_none_and_zeros_alike_and_anything_else_by_its_bytes():
    model, opt, _ = trained()
    filled, tensors = grad_buffer_digests(model, opt)  # the last step's gradients are still there
    assert list(filled) == ["grad_buffers"] and f"0.weight{SEP}grad" in tensors
    opt.zero_grad(set_to_none=False)
    zeros, _ = grad_buffer_digests(model, opt)
    opt.zero_grad(set_to_none=True)
    none, _ = grad_buffer_digests(model, opt)
    assert zeros == none != filled
    model[0].bias.grad = torch.zeros(4)
    model[0].bias.grad[1] = -1e-30  # one nonzero element is a gradient to carry
    assert grad_buffer_digests(model, opt)[0] != none
