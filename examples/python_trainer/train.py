#!/usr/bin/env python3
"""A minimal trainer that follows the parity harness's trainer contract (README, "The trainer
contract"), in standard-library Python: copy it and replace the model.

It fits y = w.x + b by SGD with momentum and a cosine learning-rate schedule over the full
schedule (PARITY_STEPS), on batches drawn from a seeded random stream, with random input noise
(so the RNG is state that a resume must restore). What the contract asks of it:

- train optimizer steps 1..PARITY_STOP_AT, or PARITY_RESUME_FROM's step + 1..PARITY_STOP_AT;
- append one JSON record per step to PARITY_METRICS_FILE, with the loss at full precision
  (json.dumps writes the shortest repr that reads back bit for bit; never round it);
- after step PARITY_SAVE_AT (the split; with several saves a comma list, `3,6`: after each), save
  into PARITY_CHECKPOINT_DIR/global_step<N>/, write the completion marker
  `checkpoint_complete.json` last (trainer.checkpoint_marker), and the `latest` file;
- emit `saved` and `loaded` events whose digests hash the logical state, so the harness can say
  which component a resume failed to restore.

The human log line on stdout is rounded to 4 decimals, as most trainers print it: that is what a
log-scraping script compares, and why the metrics file matters.

--fault=forget-momentum (a bug to catch): a resume starts with zero momentum.
"""

import hashlib
import json
import math
import os
import random
import sys

FEATURES = 4
BATCH = 8
BASE_LR = 0.05
MOMENTUM = 0.9


def env(name, default=None):
    value = os.environ.get(name, "")
    if value == "":
        if default is None:
            sys.exit(f"train.py: {name} is not set (run me through the parity harness)")
        return default
    return value


def digest(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def state_digests(state):
    return {
        "params": digest(state["params"]),
        "momentum": digest(state["momentum"]),
        "rng": digest(state["rng"]),
    }


def lr_at(step, steps):
    return BASE_LR * 0.5 * (1 + math.cos(math.pi * (step - 1) / steps))


def train_step(state, rng, step, steps, truth):
    params = state["params"]
    grad = [0.0] * (FEATURES + 1)
    loss = 0.0
    for _ in range(BATCH):
        x = [rng.gauss(0, 1) for _ in range(FEATURES)]
        y = sum(t * xi for t, xi in zip(truth, x)) + 0.5 + rng.gauss(0, 0.1)
        err = sum(p * xi for p, xi in zip(params, x)) + params[FEATURES] - y
        loss += err * err / BATCH
        for i in range(FEATURES):
            grad[i] += 2 * err * x[i] / BATCH
        grad[FEATURES] += 2 * err / BATCH
    lr = lr_at(step, steps)
    for i in range(FEATURES + 1):
        state["momentum"][i] = MOMENTUM * state["momentum"][i] + grad[i]
        params[i] -= lr * state["momentum"][i]
    return loss, lr


def emit(metrics, record):
    metrics.write(json.dumps(record) + "\n")
    metrics.flush()


def main():
    fault = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--fault=")), "")
    steps = int(env("PARITY_STEPS"))
    stop_at = int(env("PARITY_STOP_AT"))
    save_steps = [int(s) for s in env("PARITY_SAVE_AT", "").split(",") if s]
    seed = int(env("PARITY_SEED"))
    resume_from = env("PARITY_RESUME_FROM", "")
    truth = [random.Random(seed).uniform(-2, 2) for _ in range(FEATURES)]
    rng = random.Random(seed + 1)
    state = {"step": 0, "params": [0.0] * (FEATURES + 1), "momentum": [0.0] * (FEATURES + 1)}
    with open(env("PARITY_METRICS_FILE"), "a", encoding="utf-8") as metrics:
        if resume_from:
            with open(os.path.join(resume_from, "state.json"), encoding="utf-8") as f:
                state = json.load(f)
            rng.setstate((state["rng"][0], tuple(state["rng"][1]), state["rng"][2]))
            if fault == "forget-momentum":
                state["momentum"] = [0.0] * (FEATURES + 1)
            emit(metrics, {"event": "loaded", "step": state["step"], "digests": state_digests(state)})
        for step in range(state["step"] + 1, stop_at + 1):
            loss, lr = train_step(state, rng, step, steps, truth)
            state["step"] = step
            emit(metrics, {"step": step, "loss": loss, "lr": lr})
            print(f"step {step} loss {loss:.4f}", flush=True)
            if step in save_steps:
                state["rng"] = list(rng.getstate())
                save(env("PARITY_CHECKPOINT_DIR"), state)
                emit(metrics, {"event": "saved", "step": step, "digests": state_digests(state)})


def save(checkpoint_dir, state):
    tag = os.path.join(checkpoint_dir, f"global_step{state['step']}")
    os.makedirs(tag, exist_ok=True)
    with open(os.path.join(tag, "state.json"), "w", encoding="utf-8") as f:
        json.dump(state, f)
    # The marker last: a save killed half-way leaves no marker, and the harness never reuses it.
    with open(os.path.join(tag, "checkpoint_complete.json"), "w", encoding="utf-8") as f:
        json.dump({"step": state["step"]}, f)
    with open(os.path.join(checkpoint_dir, "latest"), "w", encoding="utf-8") as f:
        f.write(f"global_step{state['step']}")


if __name__ == "__main__":
    main()
