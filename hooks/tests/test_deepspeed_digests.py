"""Unit tests of parity_hooks.deepspeed's engine digests on a small torch engine stand-in (one process,
gloo group of 1, no DeepSpeed engine): per-tensor naming and per-expert entries, that the component
digests are the same formula as before, and the ``param_groups``, ``engine_counters`` and
``loss_scaler`` components.

    .venv-hooks/bin/python -m pytest hooks/tests/test_deepspeed_digests.py
"""

import tempfile
from types import SimpleNamespace

import pytest

# Imported, not importorskip: a venv without them fails these tests rather than skipping them.
import deepspeed  # noqa: E402,F401
import torch  # noqa: E402
import torch.distributed as tdist  # noqa: E402

import parity_hooks.deepspeed as ds_hook  # noqa: E402
from parity_hooks import Contract  # noqa: E402
from parity_hooks.deepspeed import SEP, Parity, logical_state  # noqa: E402

EXPERTS = 4


@pytest.fixture(scope="module", autouse=True)
def one_process_group():
    """A gloo group of one process, so the adapter's collectives run as they do on rank 0."""
    if tdist.is_initialized():
        yield
        return
    with tempfile.TemporaryDirectory() as tmp:
        tdist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=0, world_size=1)
        yield
        tdist.destroy_process_group()


@pytest.fixture(autouse=True)
def world_expert_group(monkeypatch):
    """The expert-parallel group of the stand-in is the world (DeepSpeed registers none here)."""
    monkeypatch.setattr(ds_hook, "_ep_group", lambda param: None)


class Model(torch.nn.Module):
    """A dense weight and one AutoEP-style expert parameter ``[E, 3, 2]`` carrying its placement."""

    def __init__(self, dtype=torch.float32):
        super().__init__()
        torch.manual_seed(0)
        self.dense = torch.nn.Parameter(torch.randn(3, 2, dtype=dtype))
        self.w2 = torch.nn.Parameter(torch.randn(EXPERTS, 3, 2, dtype=dtype))
        from deepspeed.checkpoint.constants import DS_AUTOEP_UC_META
        setattr(self.w2, DS_AUTOEP_UC_META, {"local_experts": list(range(EXPERTS)),
                                             "logical_shape": [EXPERTS, 3, 2], "ep_rank": 0,
                                             "expert_placement": {"ep_size": 1}})


def engine(dtype=torch.float32, micro_steps=100, fp16=False):
    """A stand-in of a DeepSpeed engine after one optimizer step: stage 0 without wrapper (the
    module parameters are the masters), two param groups (dense, experts)."""
    model = Model(dtype)
    opt = torch.optim.AdamW([{"params": [model.dense], "weight_decay": 0.01},
                             {"params": [model.w2], "weight_decay": 0.01, "moe": True}], lr=1e-3)
    (model.dense.float().sum() + (model.w2.float() ** 2).sum()).backward()
    opt.step()
    return SimpleNamespace(module=model, optimizer=opt, lr_scheduler=None, global_steps=50, global_samples=400,
                           skipped_steps=0, micro_steps=micro_steps, gradient_accumulation_steps=lambda: 2,
                           fp16_enabled=lambda: fp16)


def test_tensor_names_follow_the_reference_trainer():
    digests, tensors = logical_state(engine())
    kinds = ("params", "exp_avg", "exp_avg_sq")
    expected = {f"dense{SEP}{k}" for k in kinds} | {f"w2{SEP}expert {e}{SEP}{k}" for k in kinds
                                                     for e in range(EXPERTS)}
    assert set(tensors) == expected
    assert "w2 · expert 1 · exp_avg" in tensors
    assert all(len(d) == 16 for d in tensors.values())
    assert "module_weights" not in digests, "fp32 modules are the masters: nothing else to hash"


def test_component_digests_are_the_name_ordered_tensor_digest():
    e = engine()
    digests, _ = logical_state(e)
    state = e.optimizer.state
    for component, pick in (("params", lambda p: p), ("exp_avg", lambda p: state[p]["exp_avg"]),
                            ("exp_avg_sq", lambda p: state[p]["exp_avg_sq"])):
        named = [(n, pick(p)) for n, p in e.module.named_parameters()]
        assert digests[component] == Parity.tensor_digest(named), component


def test_one_swapped_expert_moment_names_only_its_tensors():
    a, b = engine(), engine()
    moments = b.optimizer.state[b.module.w2]["exp_avg"]
    moments[[1, 2]] = moments[[2, 1]].clone()
    da, ta = logical_state(a)
    db, tb = logical_state(b)
    assert [k for k in da if da[k] != db[k]] == ["exp_avg"]
    assert sorted(k for k in ta if ta[k] != tb[k]) == ["w2 · expert 1 · exp_avg", "w2 · expert 2 · exp_avg"]


def test_bf16_modules_get_module_entries_and_their_own_component():
    digests, tensors = logical_state(engine(torch.bfloat16))
    assert "module_weights" in digests
    assert f"dense{SEP}module" in tensors and f"w2{SEP}expert 3{SEP}module" in tensors


def test_param_groups_hash_hyper_parameters_in_group_order_not_params():
    a, b = engine(), engine()
    assert logical_state(a)[0]["param_groups"] == logical_state(b)[0]["param_groups"]
    groups = ds_hook.param_groups_state(a)
    assert [g["weight_decay"] for g in groups] == [0.01, 0.01]
    assert all("params" not in g for g in groups)
    b.optimizer.param_groups[1]["weight_decay"] = 0.0
    assert logical_state(a)[0]["param_groups"] != logical_state(b)[0]["param_groups"]


def test_engine_counters_hash_the_window_position_not_the_raw_micro_steps():
    # DeepSpeed does not checkpoint micro_steps: a resumed engine restarts it at 0 on a boundary.
    at_save, resumed, mid_window = engine(micro_steps=100), engine(micro_steps=0), engine(micro_steps=101)
    assert ds_hook.engine_counters(at_save) == {"global_steps": 50, "global_samples": 400,
                                                       "skipped_steps": 0, "window_micro_steps": 0}
    digest = lambda e: logical_state(e)[0]["engine_counters"]  # noqa: E731
    assert digest(at_save) == digest(resumed)
    assert digest(at_save) != digest(mid_window)
    resumed.global_samples = 392
    assert digest(at_save) != digest(resumed)


def test_loss_scaler_only_under_fp16():
    assert "loss_scaler" not in logical_state(engine())[0]
    e = engine(fp16=True)
    e.optimizer.loss_scaler = SimpleNamespace(cur_scale=65536.0, cur_iter=50, last_overflow_iter=-1,
                                              scale_factor=2.0, scale_window=1000, dynamic=True)
    first = logical_state(e)[0]["loss_scaler"]
    e.optimizer.loss_scaler.cur_scale = 32768.0
    assert logical_state(e)[0]["loss_scaler"] != first


def test_checkpoint_state_hashes_the_saved_rng_and_data():
    e = engine()
    p = Parity(Contract(phase="split", steps=10, stop_at=5, save_at=5, seed=1))
    running, _ = p.engine_state(e, data={"position": 40})
    honest = p.client_state({"position": 40}, step=5)
    assert p.checkpoint_state(e, honest)[0] == running
    early = p.client_state({"position": 36}, step=5)
    rng_state = torch.get_rng_state()
    torch.rand(1)
    drawn = p.client_state({"position": 40}, step=5)
    torch.set_rng_state(rng_state)
    differ = lambda c: [k for k, v in p.checkpoint_state(e, c)[0].items() if running[k] != v]  # noqa: E731
    assert differ(early) == ["data"]
    assert differ(drawn) == ["rng"]
