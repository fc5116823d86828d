"""Unit tests (torch, transformers; no DeepSpeed launch) of the models, the optimizer choice and
the code paths a GPU run takes that a CPU can check: device-correct masks and dropout (run on the
``meta`` device, where a CPU-built tensor would raise), a corpus whose memory does not grow with
the vocabulary squared, and a per-rank CUDA RNG kept out of the topology-independent digest."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parity_hooks.deepspeed as ds_hook  # noqa: E402
from parity_hooks import Contract  # noqa: E402
import train_moe  # noqa: E402
from models import AUTOEP_PRESETS, MOONLIGHT_16B_A3B, build_model, deepseek_v3_config  # noqa: E402
from optimizers import optimizer_config  # noqa: E402


def sizes(**over):
    a = SimpleNamespace(vocab=128, hidden=64, ffn=32, layers=2, experts=4, top_k=2, seq_len=16, dropout=0.1)
    for k, v in over.items():
        setattr(a, k, v)
    return a


@pytest.mark.parametrize("name", sorted(AUTOEP_PRESETS))
def test_every_model_returns_a_float32_scalar_loss_and_is_seeded(name):
    a = sizes()
    tokens = torch.randint(a.vocab, (2, a.seq_len + 1), generator=torch.Generator().manual_seed(0))
    torch.manual_seed(7)
    one = build_model(name, a, train_moe.MoECausalLM)
    torch.manual_seed(7)
    two = build_model(name, a, train_moe.MoECausalLM)
    one.eval(), two.eval()
    loss = one(tokens)
    assert loss.shape == () and loss.dtype == torch.float32 and torch.isfinite(loss)
    assert torch.equal(loss, two(tokens)), "same seed, same weights, same loss"
    assert one.model.layers[a.layers - 1].mlp is not None  # AutoEP's presets match model.layers.<i>.mlp


def test_tiny_deepseek_v3_keeps_moonlights_structure():
    cfg = deepseek_v3_config(sizes())
    assert cfg.model_type == "deepseek_v3"
    assert cfg.q_lora_rank is None and MOONLIGHT_16B_A3B["q_lora_rank"] is None
    assert cfg.n_shared_experts == MOONLIGHT_16B_A3B["n_shared_experts"]
    assert cfg.routed_scaling_factor == MOONLIGHT_16B_A3B["routed_scaling_factor"]
    assert cfg.first_k_dense_replace == 1 and cfg.norm_topk_prob and cfg.n_group == 1
    assert cfg.attention_dropout == 0.0


def test_optimizer_config_uses_torch_adam_only_for_torch_adamw():
    assert optimizer_config("torch_adamw", 1e-3)["params"]["torch_adam"] is True
    assert "torch_adam" not in optimizer_config("cpu_adam", 1e-3)["params"]
    with pytest.raises(ValueError):
        optimizer_config("sgd", 1e-3)


def test_switch_flags_take_a_value_as_the_preset_passes_them():
    a = train_moe.parse_args(["--prime-cpu-adam", "true", "--unshare-adam-step"])
    assert a.prime_cpu_adam is True and a.unshare_adam_step is True
    assert train_moe.parse_args(["--prime-cpu-adam", "false"]).prime_cpu_adam is False
    with pytest.raises(SystemExit):
        train_moe.parse_args(["--optimizer", "cpu_adam"])  # needs --offload cpu


def test_mask_and_dropout_follow_the_input_device():
    x = torch.empty(2, 5, 8, device="meta")
    attention = train_moe.Attention(8).to("meta")
    assert attention(x).device.type == "meta"
    dropout = train_moe.GlobalDropout(0.5, SimpleNamespace(dp_rank=1, dp_size=2))
    assert dropout(x).device.type == "meta"


def test_dropout_masks_come_from_the_cpu_generator():
    ctx = SimpleNamespace(dp_rank=0, dp_size=1)
    torch.manual_seed(3)
    before = torch.get_rng_state()
    train_moe.GlobalDropout(0.5, ctx)(torch.ones(2, 3))
    assert not torch.equal(before, torch.get_rng_state()), "the CPU generator advanced"


def test_corpus_memory_is_bounded_and_small_vocabularies_keep_the_dense_chain():
    small = train_moe.SyntheticCorpus(1, 64, 16)
    assert small.successors is None and tuple(small.transition.shape) == (64, 64)
    big = train_moe.SyntheticCorpus(1, 32000, 8)
    assert tuple(big.transition.shape) == (32000, 64) and tuple(big.successors.shape) == (32000, 64)
    sample = big.sample(5)
    assert torch.equal(sample, train_moe.SyntheticCorpus(1, 32000, 8).sample(5))
    assert int(sample.max()) < 32000 and sample.shape == (9, )


def test_cuda_rng_is_restored_but_never_digested():
    state = ds_hook.rng_state()
    with_cuda = dict(state, cuda=torch.arange(8, dtype=torch.uint8))
    other_cuda = dict(state, cuda=torch.arange(8, 16, dtype=torch.uint8))
    assert ds_hook._replicated_rng(with_cuda) == ds_hook._replicated_rng(other_cuda)
    assert ds_hook._replicated_rng(with_cuda) == ds_hook._replicated_rng(state)
    # Two saved ranks whose CUDA generators differ still map onto another world size (here 1).
    client = {ds_hook.CLIENT_STATE_KEY: {"rng": [with_cuda, other_cuda], "data": {"position": 3}}}
    assert ds_hook.Parity(Contract(steps=1, stop_at=1, seed=1)).restore_client_state(client) == {
        "position": 3
    }


def test_collectives_use_the_cpu_without_nccl():
    assert ds_hook._comm_device() == torch.device("cpu")
