"""Contract.from_env: every PARITY_* variable, typed; empty means unset; bad values name the variable."""

from __future__ import annotations

import json
import os

import pytest

import parity_hooks
from parity_hooks import Contract, ContractError

FULL = {"PARITY_PHASE": "split", "PARITY_STEPS": "12", "PARITY_STOP_AT": "6", "PARITY_SAVE_AT": "6",
        "PARITY_DIGEST_AT": "6", "PARITY_LR_SCALE": "1.001", "PARITY_SEED": "7",
        "PARITY_CHECKPOINT_DIR": "/ck", "PARITY_RESUME_FROM": "/ck/global_step6",
        "PARITY_RESUME_KIND": "native", "PARITY_PLAN": "/p.json", "PARITY_METRICS_FILE": "/m.jsonl",
        "PARITY_RUN_DIR": "/run"}


def test_every_variable_is_read_and_typed():
    c = Contract.from_env(FULL)
    assert c == Contract(phase="split", steps=12, stop_at=6, save_at=6, digest_at=6, save_steps=(6,),
                         digest_steps=(6,), lr_scale=1.001, seed=7,
                         checkpoint_dir="/ck", resume_from="/ck/global_step6", resume_kind="native",
                         plan="/p.json", metrics_file="/m.jsonl", run_dir="/run")
    assert c.resuming
    assert c.tag_dir(6) == os.path.join("/ck", "global_step6")


def test_empty_means_unset_and_stop_at_defaults_to_steps():
    c = Contract.from_env({**{k: "" for k in FULL}, "PARITY_STEPS": "30"})
    assert (c.steps, c.stop_at, c.save_at, c.digest_at, c.lr_scale, c.seed) == (30, 30, None, None, None, None)
    assert (c.resume_from, c.checkpoint_dir, c.metrics_file, c.resuming) == (None, None, None, False)
    with pytest.raises(ContractError, match="PARITY_CHECKPOINT_DIR"):
        c.tag_dir(1)


def test_outside_the_harness_nothing_is_set():
    assert Contract.from_env({}) == Contract()


@pytest.mark.parametrize("name,value,message", [
    ("PARITY_STEPS", "ten", "PARITY_STEPS='ten' is not an integer"),
    ("PARITY_DIGEST_AT", "6.5", "PARITY_DIGEST_AT='6.5' is not an integer or a comma list of integers"),
    ("PARITY_SAVE_AT", "6,3", "PARITY_SAVE_AT='6,3' is not ascending distinct positive steps"),
    ("PARITY_SAVE_AT", "3,3", "PARITY_SAVE_AT='3,3' is not ascending distinct positive steps"),
    ("PARITY_LR_SCALE", "x", "PARITY_LR_SCALE='x' is not a number"),
    ("PARITY_STOP_AT", "-1", "PARITY_STOP_AT=-1 is negative"),
])
def test_a_malformed_value_names_its_variable(name, value, message):
    with pytest.raises(ContractError) as error:
        Contract.from_env({**FULL, name: value})
    assert str(error.value) == message


def test_several_saves_are_a_comma_list_and_the_last_is_save_at():
    c = Contract.from_env({**FULL, "PARITY_STOP_AT": "6", "PARITY_SAVE_AT": "3,6", "PARITY_DIGEST_AT": "3,6"})
    assert (c.save_steps, c.save_at, c.digest_steps, c.digest_at) == ((3, 6), 6, (3, 6), 6)
    parity = parity_hooks.Parity(c)
    assert [s for s in range(1, 7) if parity.should_save(s)] == [3, 6]
    assert [s for s in range(1, 7) if parity.should_snapshot(s)] == [3, 6]


def test_a_contract_built_by_hand_with_save_at_alone_saves_there():
    parity = parity_hooks.Parity(Contract(steps=8, stop_at=4, save_at=4, digest_at=2))
    assert [s for s in range(1, 9) if parity.should_save(s)] == [4]
    assert [s for s in range(1, 9) if parity.should_snapshot(s)] == [2]


def test_from_env_defaults_to_the_process_environment(monkeypatch):
    monkeypatch.setenv("PARITY_DIGEST_AT", "4")
    monkeypatch.setenv("PARITY_STEPS", "8")
    assert (Contract.from_env().digest_at, Contract.from_env().steps) == (4, 8)


def test_version_is_the_harness_version():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with open(os.path.join(root, "deno.json"), encoding="utf-8") as f:
        assert parity_hooks.__version__ == json.load(f)["version"]
    with open(os.path.join(root, "hooks", "pyproject.toml"), encoding="utf-8") as f:
        assert f'version = "{parity_hooks.__version__}"' in f.read()
