"""parity_hooks: the trainer side of the parity harness's contract (README, "The trainer contract").

``Contract`` reads the ``PARITY_*`` environment of one phase; ``Parity`` writes its full-precision
metrics, the ``saved``/``loaded``/``snapshot`` digest events, the ``grads`` event (the gradient
buffers as the first resumed step begins) and the checkpoint's completion marker. The framework
hooks build on these: ``parity_hooks.torch`` (a hand-written loop), ``parity_hooks.lightning`` (a
Lightning ``Callback``), ``parity_hooks.deepspeed`` (a DeepSpeed engine) and ``parity_hooks.hf``
(the Hugging Face ``Trainer``). This module needs only the standard library; each hook imports its
framework itself.
"""

from ._contract import Contract, ContractError
from ._events import COMPLETE_MARKER, TENSORS_INLINE_MAX, Parity

__version__ = "0.1.0"

__all__ = ["Contract", "ContractError", "Parity", "COMPLETE_MARKER", "TENSORS_INLINE_MAX", "__version__"]
