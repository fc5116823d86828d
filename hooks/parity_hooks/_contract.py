"""The trainer contract's environment (README, "The trainer contract"), read once and typed.

The harness starts every phase as a fresh process with ``PARITY_*`` variables; an empty value
means "not set" (the harness writes ``PARITY_SAVE_AT=`` for phases that do not save). A split with
several saves (``schedule.save_at: [3, 6]``) gets them as an ascending comma list,
``PARITY_SAVE_AT=3,6`` (and the baseline ``PARITY_DIGEST_AT=3,6``); one save is the step alone, as
before. A value that is set but malformed raises :class:`ContractError` naming the variable, rather
than training the wrong schedule.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, Optional, Tuple

__all__ = ["Contract", "ContractError"]


class ContractError(ValueError):
    """A ``PARITY_*`` variable holds a value of the wrong kind (the message names it)."""


def _text(env: Mapping[str, str], name: str) -> Optional[str]:
    value = env.get(name, "")
    return value if value != "" else None


def _int(env: Mapping[str, str], name: str) -> Optional[int]:
    value = _text(env, name)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise ContractError(f"{name}={value!r} is not an integer") from None


def _steps(env: Mapping[str, str], name: str) -> Tuple[int, ...]:
    """A step or an ascending comma list of distinct positive steps (``3,6``); ``()`` when unset."""
    value = _text(env, name)
    if value is None:
        return ()
    try:
        steps = tuple(int(part) for part in value.split(","))
    except ValueError:
        raise ContractError(f"{name}={value!r} is not an integer or a comma list of integers") from None
    if any(s < 1 for s in steps) or any(b <= a for a, b in zip(steps, steps[1:])):
        raise ContractError(f"{name}={value!r} is not ascending distinct positive steps")
    return steps


def _float(env: Mapping[str, str], name: str) -> Optional[float]:
    value = _text(env, name)
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        raise ContractError(f"{name}={value!r} is not a number") from None


@dataclass(frozen=True)
class Contract:
    """One phase's view of the contract. Steps are optimizer steps, 1-based.

    ``steps`` is the full schedule length (an LR schedule must span it, even when this phase stops
    earlier); ``stop_at`` the last step this phase runs (``steps`` when unset); ``save_at`` the step
    after which the split saves last (``save_steps`` every step it saves after, ascending);
    ``digest_at`` the last step after which the baseline reports a ``snapshot`` (``digest_steps``
    every one); ``lr_scale`` the factor a calibration resume applies to every LR from its first
    resumed step. ``steps`` is 0 when ``PARITY_STEPS`` is unset (a run outside the harness).
    """

    phase: str = ""
    steps: int = 0
    stop_at: int = 0
    save_at: Optional[int] = None
    digest_at: Optional[int] = None
    save_steps: Tuple[int, ...] = ()
    digest_steps: Tuple[int, ...] = ()
    lr_scale: Optional[float] = None
    seed: Optional[int] = None
    checkpoint_dir: Optional[str] = None
    resume_from: Optional[str] = None
    resume_kind: Optional[str] = None
    plan: Optional[str] = None
    metrics_file: Optional[str] = None
    run_dir: Optional[str] = None

    @classmethod
    def from_env(cls, env: Optional[Mapping[str, str]] = None) -> "Contract":
        """Reads every ``PARITY_*`` variable of the contract from ``env`` (default ``os.environ``)."""
        env = os.environ if env is None else env
        steps = _int(env, "PARITY_STEPS") or 0
        stop_at = _int(env, "PARITY_STOP_AT")
        for name, value in (("PARITY_STEPS", steps), ("PARITY_STOP_AT", stop_at)):
            if value is not None and value < 0:
                raise ContractError(f"{name}={value} is negative")
        save_steps = _steps(env, "PARITY_SAVE_AT")
        digest_steps = _steps(env, "PARITY_DIGEST_AT")
        return cls(
            phase=env.get("PARITY_PHASE", ""),
            steps=steps,
            stop_at=steps if stop_at is None else stop_at,
            save_at=save_steps[-1] if save_steps else None,
            digest_at=digest_steps[-1] if digest_steps else None,
            save_steps=save_steps,
            digest_steps=digest_steps,
            lr_scale=_float(env, "PARITY_LR_SCALE"),
            seed=_int(env, "PARITY_SEED"),
            checkpoint_dir=_text(env, "PARITY_CHECKPOINT_DIR"),
            resume_from=_text(env, "PARITY_RESUME_FROM"),
            resume_kind=_text(env, "PARITY_RESUME_KIND"),
            plan=_text(env, "PARITY_PLAN"),
            metrics_file=_text(env, "PARITY_METRICS_FILE"),
            run_dir=_text(env, "PARITY_RUN_DIR"),
        )

    @property
    def resuming(self) -> bool:
        """Whether this phase loads a checkpoint (``PARITY_RESUME_FROM`` is set)."""
        return self.resume_from is not None

    def tag_dir(self, step: int, tag: str = "global_step{step}") -> str:
        """``<checkpoint_dir>/global_step<step>``: where the split saves (the harness's default
        ``trainer.checkpoint_tag``). Raises when ``PARITY_CHECKPOINT_DIR`` is unset."""
        if self.checkpoint_dir is None:
            raise ContractError("PARITY_CHECKPOINT_DIR is not set (this phase does not save)")
        return os.path.join(self.checkpoint_dir, tag.format(step=int(step)))
