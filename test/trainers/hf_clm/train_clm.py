"""A causal-LM fine-tuning script written the way Hugging Face's `run_clm.py` is: arguments through
`HfArgumentParser` (its own plus `TrainingArguments`), a tiny GPT-2 built from a config (dropout on),
a local text file cut into blocks, and `transformers.Trainer` with its default AdamW and linear
schedule. It knows nothing about parity: the harness runs it through `python -m parity_hooks.hf`.

The tokenizer is trained at start from the same text with the `tokenizers` library (byte-level
BPE), so nothing is downloaded. `--skip_rng_restore` is a test fault: it makes Trainer's RNG
restore a no-op, the bug a resume without its RNG state has.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Dict, List

import torch
from tokenizers import ByteLevelBPETokenizer
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    HfArgumentParser,
    PreTrainedTokenizerFast,
    Trainer,
    TrainingArguments,
    default_data_collator,
    set_seed,
)


@dataclass
class ScriptArguments:
    """The script's own arguments (model shape, data, the test fault)."""

    train_file: str = field(metadata={"help": "a local text file"})
    block_size: int = field(default=32, metadata={"help": "tokens per training sample"})
    vocab_size: int = field(default=384, metadata={"help": "BPE vocabulary trained at start"})
    n_layer: int = field(default=2)
    n_head: int = field(default=2)
    n_embd: int = field(default=32)
    dropout: float = field(default=0.1, metadata={"help": "GPT-2's resid/embd/attn dropout"})
    skip_rng_restore: bool = field(
        default=False, metadata={"help": "test fault: Trainer does not restore its RNG on resume"}
    )


class BlockDataset(torch.utils.data.Dataset):
    """Fixed-length blocks of token ids; labels are the inputs (the model shifts them)."""

    def __init__(self, ids: List[int], block_size: int) -> None:
        n = len(ids) // block_size
        self.blocks = [ids[i * block_size:(i + 1) * block_size] for i in range(n)]

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, i: int) -> Dict[str, torch.Tensor]:
        ids = torch.tensor(self.blocks[i], dtype=torch.long)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}


def train_tokenizer(text: str, vocab_size: int) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on `text` (deterministic for the same text)."""
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(text.splitlines(), vocab_size=vocab_size, min_frequency=2,
                            special_tokens=["<|endoftext|>"], show_progress=False)
    return PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>")


def main(argv: List[str]) -> None:
    parser = HfArgumentParser((ScriptArguments, TrainingArguments))
    script, training = parser.parse_args_into_dataclasses(args=argv)
    if script.skip_rng_restore:
        Trainer._load_rng_state = lambda self, checkpoint: None  # the fault, nothing else

    set_seed(training.seed)
    with open(script.train_file, encoding="utf-8") as f:
        text = f.read()
    tokenizer = train_tokenizer(text, script.vocab_size)
    ids = tokenizer(text)["input_ids"]
    dataset = BlockDataset(ids, script.block_size)
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=script.block_size, n_layer=script.n_layer,
        n_head=script.n_head, n_embd=script.n_embd, resid_pdrop=script.dropout,
        embd_pdrop=script.dropout, attn_pdrop=script.dropout,
        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    model = GPT2LMHeadModel(config)
    trainer = Trainer(model=model, args=training, train_dataset=dataset,
                      processing_class=tokenizer, data_collator=default_data_collator)
    trainer.train(resume_from_checkpoint=training.resume_from_checkpoint)


if __name__ == "__main__":
    main(sys.argv[1:])
