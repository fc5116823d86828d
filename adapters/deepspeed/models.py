"""The models ``train_moe.py --model`` trains, each built in code from a tiny config (no download):

``moe``          the hand-built Mixtral-shaped module tree of train_moe.py (AutoEP preset ``mixtral``)
``deepseek_v3``  Hugging Face ``DeepseekV3ForCausalLM``, the class of Moonlight-16B-A3B, the seed
                 run's model (AutoEP preset ``deepseek_v3``)
``mixtral``      Hugging Face ``MixtralForCausalLM`` (AutoEP preset ``mixtral``)

Every model's ``forward(tokens)`` takes ``[batch, seq_len + 1]`` token ids and returns the mean
next-token cross-entropy over the ``seq_len`` predicted positions, computed in float32: the same
contract, data, RNG and digest discipline for all three. The Hugging Face models are random-init
(seeded by the caller's ``torch.manual_seed``, identical on every rank) and have no dropout
(``attention_dropout=0``, as Moonlight trains), so they draw nothing from the RNG; the RNG is still
saved, restored and digested. They need ``transformers`` (pinned in requirements.txt); ``moe`` does
not import it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable, Dict

import torch

#: Model name -> the AutoEP preset (``expert_parallel.preset_model``) that detects its MoE layers.
AUTOEP_PRESETS: Dict[str, str] = {"moe": "mixtral", "deepseek_v3": "deepseek_v3", "mixtral": "mixtral"}

#: The hand-built model with a dense MLP instead of experts: no AutoEP, so any DeepSpeed from 0.16.0.
DENSE = "dense"

#: Every ``--model`` choice.
MODELS = sorted([*AUTOEP_PRESETS, DENSE])

#: Moonlight-16B-A3B's published config (``moonshotai/Moonlight-16B-A3B``, config.json), for the
#: record: what the tiny DeepseekV3 keeps (structure) and what it shrinks (sizes).
MOONLIGHT_16B_A3B = {
    "vocab_size": 163840, "hidden_size": 2048, "intermediate_size": 11264, "moe_intermediate_size": 1408,
    "num_hidden_layers": 27, "first_k_dense_replace": 1, "num_attention_heads": 16,
    "num_key_value_heads": 16, "n_routed_experts": 64, "num_experts_per_tok": 6, "n_shared_experts": 2,
    "routed_scaling_factor": 2.446, "norm_topk_prob": True, "n_group": 1, "topk_group": 1,
    "q_lora_rank": None, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128,
}


def deepseek_v3_config(a: Any) -> Any:
    """A tiny ``DeepseekV3Config`` with Moonlight's structural choices at small size. Sizes come
    from train_moe.py's model flags so ``--experts``/``--top-k``/``--layers`` mean the same for
    every model."""
    from transformers import DeepseekV3Config

    heads = 4
    return DeepseekV3Config(
        vocab_size=a.vocab,  # token ids of the synthetic corpus
        hidden_size=a.hidden,  # residual width (Moonlight 2048)
        intermediate_size=2 * a.hidden,  # the dense layer's SwiGLU width (Moonlight 11264)
        moe_intermediate_size=a.ffn,  # each routed / shared expert's SwiGLU width (Moonlight 1408)
        num_hidden_layers=a.layers,  # layer 0 dense, the rest MoE (Moonlight: 1 dense + 26 MoE)
        first_k_dense_replace=1,  # Moonlight: 1 leading dense layer
        num_attention_heads=heads,  # MLA heads (Moonlight 16)
        num_key_value_heads=heads,  # MLA has no GQA (Moonlight 16 = heads)
        n_routed_experts=a.experts,  # routed experts per MoE layer (Moonlight 64)
        num_experts_per_tok=a.top_k,  # routed experts per token (Moonlight top-6)
        n_shared_experts=2,  # always-on shared experts (Moonlight 2)
        routed_scaling_factor=2.446,  # scale of the normalised top-k weights (Moonlight's value)
        norm_topk_prob=True,  # top-k weights renormalised (Moonlight)
        n_group=1,  # no group-limited routing (Moonlight: n_group = topk_group = 1)
        topk_group=1,
        q_lora_rank=None,  # no q-LoRA: queries are one projection (Moonlight's choice)
        kv_lora_rank=16,  # compressed KV latent of MLA (Moonlight 512)
        qk_nope_head_dim=8,  # per-head query/key dims without RoPE (Moonlight 128)
        qk_rope_head_dim=8,  # per-head dims with RoPE (Moonlight 64)
        v_head_dim=8,  # per-head value dim (Moonlight 128)
        max_position_embeddings=max(64, a.seq_len + 1),
        attention_dropout=0.0,
        tie_word_embeddings=False,  # Moonlight: separate LM head
        use_cache=False,
        attn_implementation="eager",  # deterministic, no SDPA kernel choice
    )


def mixtral_config(a: Any) -> Any:
    """A tiny ``MixtralConfig`` (sizes from the model flags)."""
    from transformers import MixtralConfig

    return MixtralConfig(
        vocab_size=a.vocab,
        hidden_size=a.hidden,
        intermediate_size=a.ffn,  # each expert's SwiGLU width
        num_hidden_layers=a.layers,  # every layer MoE
        num_attention_heads=4,
        num_key_value_heads=2,  # GQA, as Mixtral
        num_local_experts=a.experts,
        num_experts_per_tok=a.top_k,
        router_jitter_noise=0.0,  # no random routing noise
        output_router_logits=False,  # no auxiliary load-balancing loss in the logged loss
        max_position_embeddings=max(64, a.seq_len + 1),
        attention_dropout=0.0,
        tie_word_embeddings=False,
        use_cache=False,
        attn_implementation="eager",
    )


def _hf_lm(cls: Any, config: Any) -> torch.nn.Module:
    """An instance of a subclass of ``cls`` whose ``forward(tokens)`` returns the loss. A subclass,
    not a wrapper, keeps the module paths (``model.layers.<i>.mlp``) AutoEP's presets match."""

    class ParityLM(cls):  # type: ignore[misc, valid-type]

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
            out = super().forward(input_ids=tokens, labels=tokens, use_cache=False)
            return out.loss

    ParityLM.__name__ = f"Parity{cls.__name__}"
    return ParityLM(config)


def build_model(name: str, a: Any, hand_built: Callable[[SimpleNamespace], torch.nn.Module]) -> torch.nn.Module:
    """The model ``name`` at the sizes of ``a`` (train_moe.py's flags). ``hand_built`` builds
    ``moe`` from its namespace config (train_moe.py owns that model)."""
    if name in ("moe", DENSE):
        experts = a.experts if name == "moe" else 0  # no experts: a dense MLP per layer
        return hand_built(SimpleNamespace(model_type=f"parity_{name}", vocab_size=a.vocab, hidden_size=a.hidden,
                                          intermediate_size=a.ffn, num_hidden_layers=a.layers,
                                          num_local_experts=experts, num_experts_per_tok=a.top_k,
                                          dropout=a.dropout))
    if name == "deepseek_v3":
        from transformers import DeepseekV3ForCausalLM
        return _hf_lm(DeepseekV3ForCausalLM, deepseek_v3_config(a))
    if name == "mixtral":
        from transformers import MixtralForCausalLM
        return _hf_lm(MixtralForCausalLM, mixtral_config(a))
    raise ValueError(f"unknown model {name!r}; expected one of {MODELS}")
