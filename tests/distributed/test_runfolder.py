"""The run folder's log always equals the history it was given last (appended while the history only
grows, rewritten after a roll-back or when someone else wrote the file), and an elastic launch trains
one stage of a staged run."""
import json
import os

import pytest

from gluon_suite.distributed import LocalCommunicator
from gluon_suite.distributed.runfolder import RunFolder
from gluon_suite.utils import UserError


def lines(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_the_log_follows_the_history_through_growth_roll_back_and_another_writer(tmp_path):
    run = RunFolder(str(tmp_path), "none", LocalCommunicator())
    path = tmp_path / "log.jsonl"
    recs = [{"step": s, "loss": 1.0 / s} for s in range(1, 6)]
    run.write_log(recs[:2])
    assert lines(path) == recs[:2]
    inode = os.stat(path).st_ino
    run.write_log(recs[:3])                                  # grew: appended in place
    assert lines(path) == recs[:3] and os.stat(path).st_ino == inode
    run.write_log(recs[:1])                                  # rolled back to a commit: rewritten
    assert lines(path) == recs[:1]
    run.write_log(recs[:2])
    assert lines(path) == recs[:2]
    with open(path, "a", encoding="utf-8") as f:             # another rank 0 wrote in between
        f.write(json.dumps({"step": 99}) + "\n")
    run.write_log(recs[:4])
    assert lines(path) == recs[:4]
    # a new process taking over the folder (an elastic rank 0 that never wrote it) rewrites it once
    other = RunFolder(str(tmp_path), "auto", LocalCommunicator())
    other.write_log(recs)
    assert lines(path) == recs


def test_an_elastic_launch_trains_one_stage_and_a_fixed_one_all_that_are_left(tmp_path):
    fixed = RunFolder(str(tmp_path / "f"), "none", LocalCommunicator())
    assert list(fixed.stages(1, 3)) == [1, 2] and list(fixed.stages(3, 3)) == []
    said = []
    elastic = RunFolder(str(tmp_path / "e"), "none", LocalCommunicator(), elastic=True)
    assert list(elastic.stages(0, 3, log=said.append)) == [0]
    assert said == ["phase 1 done; an elastic launch trains one phase: launch again with --resume auto for the next"]
    assert list(elastic.stages(2, 3, log=said.append)) == [2] and len(said) == 1   # the last: nothing to say
    with pytest.raises(UserError, match="finished all 3 phase"):
        list(elastic.stages(3, 3))
