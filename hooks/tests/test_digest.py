"""Canonical hashing: bytes, JSON, tensors (dtype, shape, bytes; name order), RNG states."""

from __future__ import annotations

import hashlib
import random

import pytest
import torch

from parity_hooks._digest import (ABSENT, ZERO, digest_bytes, digest_json, named_tensors_digest,
                                  rng_digest_of_states, tensor_digest)
from parity_hooks._rng import rng_digest, rng_state, set_rng_state


def test_digests_are_sha256_prefixes_and_order_sensitive():
    assert digest_bytes([b"a", b"b"]) == hashlib.sha256(b"ab").hexdigest()[:16]
    assert digest_bytes([b"a", b"b"]) != digest_bytes([b"b", b"a"])
    assert digest_json({"b": 1, "a": 2}) == digest_json({"a": 2, "b": 1})
    assert digest_json({"last_batch_iteration": 49}) != digest_json({"last_batch_iteration": 50})


def test_a_tensor_digest_sees_dtype_shape_and_every_bit():
    x = torch.arange(6, dtype=torch.float32)
    assert tensor_digest(x) == tensor_digest(x.clone())
    assert tensor_digest(x) != tensor_digest(x.double())
    assert tensor_digest(x) != tensor_digest(x.view(2, 3))
    y = x.clone()
    y[3] = torch.nextafter(y[3], torch.tensor(10.0))  # one ULP
    assert tensor_digest(x) != tensor_digest(y)
    assert tensor_digest(x.view(2, 3).t()) == tensor_digest(x.view(2, 3).t().contiguous())


def test_bfloat16_is_hashed_by_its_own_bytes():
    x = torch.tensor([1.0, 1.0078125], dtype=torch.bfloat16)
    assert tensor_digest(x) != tensor_digest(x.float())
    assert tensor_digest(x) == tensor_digest(x.clone())


def test_absent_is_not_zeros():
    assert tensor_digest(ABSENT) != tensor_digest(torch.zeros(3))


def test_zero_is_a_marker_of_its_own():
    zero = tensor_digest(ZERO)
    assert zero != tensor_digest(ABSENT) and zero != tensor_digest(torch.zeros(3))


def test_named_digests_do_not_depend_on_order():
    a, b = torch.ones(2), torch.zeros(2)
    assert named_tensors_digest([("a", a), ("b", b)]) == named_tensors_digest([("b", b), ("a", a)])
    assert named_tensors_digest([("a", a), ("b", b)]) != named_tensors_digest([("a", b), ("b", a)])


def test_rng_state_round_trips_and_the_digest_follows_a_draw():
    state = rng_state()
    before = rng_digest(gather=False)
    first = (random.random(), torch.rand(2).tolist())
    assert rng_digest(gather=False) != before
    set_rng_state(state)
    assert rng_digest(gather=False) == before
    assert (random.random(), torch.rand(2).tolist()) == first


def test_replicated_ranks_give_the_digest_of_one_state():
    state = rng_state()
    assert rng_digest_of_states([state, state]) == rng_digest_of_states([state])
    random.random()
    other = rng_state()
    assert rng_digest_of_states([state, other]) != rng_digest_of_states([state])


@pytest.mark.parametrize("key", ["python", "torch", "numpy"])
def test_every_generator_counts(key):
    import numpy

    state = rng_state()
    base = rng_digest_of_states([state])
    {"python": random.random, "torch": lambda: torch.rand(1), "numpy": numpy.random.rand}[key]()
    assert rng_digest_of_states([rng_state()]) != base
