"""Unit tests of process_maps.py (standard library only):

    python3 -m unittest adapters/deepspeed/test_process_maps.py
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from process_maps import (check_layout, ep_rank_of, expert_data_parallel_group, slot_experts,  # noqa: E402
                          widen_to_processes)


def _piece(experts, first_slot, first_expert, holders, per=6):
    strides = [per, 3, 1]
    return {"shape": [experts, 2, 3], "source": [first_expert * per, strides], "dest": [first_slot * per, strides],
            "locations": holders}


# DeepSpeed's lowering of 4 experts over EP 2, contiguous: rank 0 holds 0-1, rank 1 holds 2-3.
EP2 = {"logical_shape": [4, 2, 3], "ranks": {
    "0": {"shard_shape": [2, 2, 3], "pieces": [_piece(2, 0, 0, [0])]},
    "1": {"shard_shape": [2, 2, 3], "pieces": [_piece(2, 0, 2, [1])]},
}}


class ProcessMapsTest(unittest.TestCase):

    def test_legacy_ed_layout(self):
        # groups.py: EP groups [0,1],[2,3]; expert-DP groups [0,2],[1,3].
        self.assertEqual([ep_rank_of(g, 2) for g in range(4)], [0, 1, 0, 1])
        self.assertEqual(expert_data_parallel_group(1, 4, 2), [1, 3])
        with self.assertRaises(ValueError):
            check_layout(3, 2)

    def test_widened_map_lists_every_replica_as_holder(self):
        wide = widen_to_processes(EP2, 4, 2)
        self.assertEqual(sorted(wide["ranks"]), ["0", "1", "2", "3"])
        self.assertEqual(wide["ranks"]["2"]["pieces"][0]["locations"], [0, 2])
        self.assertEqual(wide["ranks"]["3"]["pieces"][0]["locations"], [1, 3])
        self.assertEqual(wide["ranks"]["3"]["shard_shape"], [2, 2, 3])
        # The EP-level map is untouched.
        self.assertEqual(EP2["ranks"]["1"]["pieces"][0]["locations"], [1])

    def test_widening_refuses_a_map_of_another_ep_size(self):
        with self.assertRaises(ValueError):
            widen_to_processes(EP2, 4, 4)

    def test_slot_experts_reads_what_the_map_claims(self):
        self.assertEqual(slot_experts(EP2, 1), [2, 3])
        swapped = {"logical_shape": [4, 2, 3], "ranks": {"0": {"shard_shape": [2, 2, 3], "pieces": [
            _piece(1, 0, 1, [0]), _piece(1, 1, 0, [0])]}}}
        self.assertEqual(slot_experts(swapped, 0), [1, 0])


if __name__ == "__main__":
    unittest.main()
