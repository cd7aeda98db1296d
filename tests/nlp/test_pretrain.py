"""BERT pretraining on the embedded corpus: the MLM loss falls, phase 2 starts from phase 1's
checkpoint with the longer sequence, and 2 Horovod workers equal one worker with the doubled batch."""
import json

import numpy as np
import pytest

from gluon_suite.distributed import LocalCommunicator
from gluon_suite.nlp.pretrain import pretrain_bert

P1 = {"seq_len": 64, "batch_size": 32, "steps": 150, "lr": 0.02, "warmup": 0.1, "constant": 0.3}
P2 = {"seq_len": 128, "batch_size": 16, "steps": 6, "lr": 0.01, "warmup": 0.2, "constant": 0.0}


def test_mlm_loss_falls_30_percent_and_phase2_resumes_from_phase1(tmp_path):
    out = str(tmp_path / "bert")
    base = {"out": out, "progress": False, "dropout": 0.0, "ckpt_every": 1000, "seed": 1}
    res = pretrain_bert({**base, "phases": [P1]}, LocalCommunicator(), log=lambda m: None)
    h = res["history"]
    start = h[0]["mlm_loss"]
    end = float(np.mean([r["mlm_loss"] for r in h[-10:]]))
    assert end <= 0.7 * start, (start, end)
    state = json.load(open(tmp_path / "bert" / "state.json"))
    assert state["phase"] == 1 and state["step"] == 0   # phase 1 complete

    logs = []
    res2 = pretrain_bert({**base, "resume": "auto", "phases": [P1, P2]}, LocalCommunicator(), log=logs.append)
    assert any("resumed from" in m and "phase 2" in m for m in logs)
    p2 = [r for r in res2["history"] if r["phase"] == 2]
    assert len(p2) == P2["steps"] and all(r["seq_len"] == 128 for r in p2)
    assert len(res2["history"]) == P1["steps"] + P2["steps"]   # phase 1 was not run again
    # phase 2 starts from the trained weights, not from scratch
    assert p2[0]["mlm_loss"] < 0.85 * start
    lines = [json.loads(l) for l in (tmp_path / "bert" / "log.jsonl").read_text().splitlines()]
    assert [l["phase"] for l in lines].count(2) == P2["steps"] and len(lines) == P1["steps"] + P2["steps"]


JOB = """
import json, os
import numpy as np, mxnet as mx
from mxnet import autograd
from gluon_suite.distributed import DistributedTrainer, LocalCommunicator, get_communicator
from gluon_suite.model_zoo import get_model
from gluon_suite.nlp.pretrain import BertPretrainLoss
from gluon_suite.nlp.pretraining_data import create_instances
from gluon_suite.nlp.text import build_vocab, embedded_corpus, tokenizer

comm = get_communicator()
docs = embedded_corpus()[:20]
vocab = build_vocab(docs, min_freq=3)
tok = tokenizer(vocab)
data = create_instances([[tok(s) for s in d] for d in docs], vocab, 32, seed=0)
keys = ("input_ids", "token_types", "valid_length", "masked_positions", "masked_ids", "masked_weights", "nsp_labels")
B = 4

def make(c):
    mx.random.seed(0)
    net = get_model("bert_2_128_2", vocab_size=len(vocab), max_length=32, dropout=0.0)
    net.initialize(mx.init.Normal(0.02))
    net(mx.nd.zeros((1, 32)), mx.nd.zeros((1, 32)), mx.nd.array([32]), mx.nd.zeros((1, 5)))
    tr = DistributedTrainer(net.collect_params(), "lans", {"learning_rate": 0.01, "wd": 0.01}, communicator=c)
    return net, tr

def flat(net):
    # the attention key bias has an exactly zero true gradient (softmax is shift-invariant), so
    # LANS's g/||g|| turns its rounding noise into full-size steps: compare everything else
    return np.concatenate([p.data().asnumpy().ravel() for k, p in sorted(net._collect_params_with_prefix().items())
                           if not k.endswith("proj_key.bias")])

loss_fn = BertPretrainLoss(len(vocab))
def step(net, tr, sel):
    batch = [mx.nd.array(data[k][sel], dtype=data[k].dtype) for k in keys]
    with autograd.record():
        loss, _ = loss_fn(net, batch)
    loss.backward()
    tr.step(len(sel))

net, tr = make(comm)
if comm.rank == 0:
    ref, rtr = make(LocalCommunicator())
res = {"dist": [], "single": []}
for s in range(3):
    glob = np.arange(s * 2 * B, (s + 1) * 2 * B)
    step(net, tr, glob[comm.rank * B:(comm.rank + 1) * B])
    res["dist"].append(flat(net).tolist())
    if comm.rank == 0:
        step(ref, rtr, glob)
        res["single"].append(flat(ref).tolist())
json.dump(res, open(os.path.join(os.environ["OUT"], f"rank{comm.rank}.json"), "w"))
"""


@pytest.mark.horovod
def test_two_workers_with_lans_equal_one_worker_with_the_doubled_batch(horovod):
    r0, r1 = horovod(JOB, np_=2)
    for s in range(3):
        d0, d1, single = (np.array(x) for x in (r0["dist"][s], r1["dist"][s], r0["single"][s]))
        assert np.array_equal(d0, d1), s                      # identical on both workers
        assert np.abs(d0 - single).max() <= 1e-5, (s, np.abs(d0 - single).max())
    assert np.abs(np.array(r0["dist"][2]) - np.array(r0["dist"][0])).max() > 1e-4
