"""Integration test with real DeepSpeed (AutoEP, ZeRO-1, bf16) on 2 CPU ranks via torchrun:
a 10-step run saving after step 5, and a native resume of that save. The resume must continue
bit-identically, the loaded digests must equal the saved ones, and the checkpoint must carry
DeepSpeed's completion marker and AutoEP layout.

    bash tools/setup_deepspeed.sh && .venv-deepspeed/bin/python -m pytest adapters/deepspeed/test_deepspeed_resume.py
"""

import json
import os
import subprocess
import sys

import deepspeed  # noqa: F401  (imported, not importorskip: a venv without DeepSpeed fails, never skips)

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)
SCRIPT = os.path.join(HERE, "train_moe.py")
FLAGS = ["--zero-stage", "1", "--precision", "bf16", "--grad-accum", "2", "--autoep-size", "2"]


def run(tmp, name, **env):
    run_dir = os.path.join(tmp, name)
    os.makedirs(run_dir)
    metrics = os.path.join(run_dir, "metrics.jsonl")
    full_env = dict(os.environ, DS_ACCELERATOR="cpu", PARITY_PHASE=name, PARITY_STEPS="10", PARITY_SEED="99",
                    PARITY_RUN_DIR=run_dir, PARITY_METRICS_FILE=metrics, **env)
    argv = [os.path.join(BIN, "torchrun"), "--standalone", "--nproc-per-node", "2", SCRIPT, *FLAGS]
    proc = subprocess.run(argv, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:]
    with open(metrics) as f:
        return [json.loads(line) for line in f]


def losses(records):
    return {r["step"]: r["loss"] for r in records if "event" not in r}


def event(records, kind):
    found = [r for r in records if r.get("event") == kind]
    assert len(found) == 1, records
    return found[0]


def test_native_resume_is_bit_identical_with_equal_digests(tmp_path):
    tmp = str(tmp_path)
    ckpt = os.path.join(tmp, "checkpoints")
    # Two launches keep the test under a minute: the run that saves after step 5 goes on to step 10
    # and is the baseline (measure.py and the harness use a separate baseline and split).
    split = run(tmp, "split", PARITY_STOP_AT="10", PARITY_SAVE_AT="5", PARITY_CHECKPOINT_DIR=ckpt)
    baseline = split
    tag = os.path.join(ckpt, "global_step5")
    # DeepSpeed writes `latest` (the tag name) after the tag folder: the completion marker.
    with open(os.path.join(ckpt, "latest")) as f:
        assert f.read().strip() == "global_step5"
    # The adapter's marker inside the tag folder, written after save_checkpoint returned everywhere.
    with open(os.path.join(tag, "parity_checkpoint_complete.json")) as f:
        marker = json.load(f)
    assert marker["step"] == 5 and marker["world_size"] == 2
    resume = run(tmp, "resume-native", PARITY_CHECKPOINT_DIR=ckpt, PARITY_RESUME_FROM=tag, PARITY_RESUME_KIND="native")

    base = losses(baseline)
    assert sorted(base) == list(range(1, 11))
    assert losses(resume) == {s: base[s] for s in range(6, 11)}, "native resume is not bit-identical"
    # The run learns something (the comparison is not between constants).
    assert len(set(base.values())) == 10

    saved, loaded = event(split, "saved"), event(resume, "loaded")
    assert saved["step"] == loaded["step"] == 5
    assert saved["micro_step"] == 10 and saved["grad_accum"] == 2
    assert set(saved["digests"]) == {"params", "exp_avg", "exp_avg_sq", "module_weights", "optimizer_step",
                                     "lr_scheduler", "param_groups", "engine_counters", "rng", "data"}
    assert loaded["digests"] == saved["digests"]
    # One digest per tensor kind and expert, equal after the load; DeepSpeed restarts micro_steps.
    assert "model.layers.0.mlp.experts.w2 · expert 3 · exp_avg" in saved["tensors"]
    assert "model.layers.0.mlp.experts.w2 · expert 3 · module" in saved["tensors"]
    assert loaded["tensors"] == saved["tensors"]
    assert loaded["engine_micro_steps"] == 0
    assert marker["digests"] == saved["digests"]

    layout = subprocess.run([sys.executable, os.path.join(HERE, "autoep_layout.py"), tag], check=True,
                            stdout=subprocess.PIPE, text=True).stdout
    layers = json.loads(layout)["layers"]
    assert [l["module_path"] for l in layers] == ["model.layers.0.mlp", "model.layers.1.mlp"]
    assert layers[0]["ranks"] == [{"rank": 0, "experts": [0, 1]}, {"rank": 1, "experts": [2, 3]}]
    assert [p["name"].rsplit(".", 1)[1] for p in layers[0]["params"]] == ["w1", "w2", "w3"]
    assert [f["expert"] for f in layers[0]["expert_files"]] == [0, 1, 2, 3]

    # The planner's target lowering (DeepSpeed's autoep_placement_to_affine_map of the legacy
    # placement) equals the maps a checkpoint saved at that topology records.
    sys.path.insert(0, HERE)
    from autoep_layout import layout as read_layout
    from deepspeed_planner import _target_ep_map
    for layer in read_layout(tag, with_maps=True)["layers"]:
        for param in layer["params"]:
            lowered = _target_ep_map(layer["num_experts"], 2, param["logical_shape"])
            # JSON both, so rank keys compare as the same type.
            assert json.loads(json.dumps(lowered)) == json.loads(json.dumps(param["map"])), param["name"]

    # A same-topology plan made by DeepSpeed's planner and executed on the checkpoint's bytes
    # builds exactly what the native resume holds after its load, slot by slot.
    target = os.path.join(tmp, "target.json")
    with open(target, "w") as f:
        json.dump({"world_size": 2, "autoep_size": 2}, f)
    plan, executed = os.path.join(tmp, "plan.json"), os.path.join(tmp, "executed.json")
    subprocess.run([sys.executable, os.path.join(HERE, "deepspeed_planner.py"), "--source-checkpoint", tag,
                    "--target", target, "--policy", "first_holder", "--out", plan], check=True)
    subprocess.run([sys.executable, os.path.join(HERE, "plan_executor.py"), "--source-checkpoint", tag, "--plan",
                    plan, "--out", executed], check=True)
    with open(executed) as f:
        built = json.load(f)
    with open(os.path.join(tmp, "resume-native", "process_state.json")) as f:
        held = json.load(f)
    assert sorted(built["processes"]) == sorted(held["processes"]) == ["0", "1"]
    for process, entry in held["processes"].items():
        assert built["processes"][process]["params"] == entry["params"], process
        assert built["processes"][process]["ep_rank"] == entry["ep_rank"] == int(process)
    assert sorted(held["processes"]["1"]["params"]["model.layers.0.mlp.experts.w1"]) == [
        "exp_avg", "exp_avg_sq", "experts", "fp32", "module", "shape"]
