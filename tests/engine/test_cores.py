"""Sharing the cores: blocks per slot, and a lock per block so that parallel jobs never share one."""
import subprocess
import sys

import pytest

from sgi_run.engine import cores


def test_cores_are_shared_in_blocks_and_each_block_claimed_by_one_process(tmp_path, session_cores):
    assert [cores.share(s, 2, [0, 1, 2, 3]) for s in range(2)] == [[0, 1], [2, 3]]
    assert [cores.share(s, 3, [0, 1]) for s in range(3)] == [[0], [1], [0]]
    with session_cores() as machine:
        if len(machine) < 2:
            pytest.skip("one core: nothing to share")
        # Each process claims the first free block and holds it while it lives; a third finds none.
        claim = ("import sys; from sgi_run.engine.cores import claim_cores; "
                 "print(claim_cores(sys.argv[1], 2), flush=True); sys.stdin.read()")
        holders = [subprocess.Popen([sys.executable, "-c", claim, str(tmp_path)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True) for _ in range(3)]
    claimed = []
    for holder in holders:                   # one at a time: each prints once it has claimed
        claimed.append(holder.stdout.readline().strip())
    for holder in holders:
        holder.communicate("")
    assert sorted(claimed) == sorted([str(cores.share(0, 2, machine)), str(cores.share(1, 2, machine)), "None"])
