"""Worker of tests/distributed/test_elastic.py: an elastic digits MLP job; with KILL=1 the worker of
rank 2 kills itself with SIGKILL in the middle of epoch 2 (once); with ADD=1 rank 0 adds the host
ADD_HOST to the discovery file in the middle of epoch 2 (once). ALGO: sync, cser, or fp16 (float16
weights, Adam with float32 masters, a loss scale kept as elastic counters)."""
import faulthandler, json, os, signal
faulthandler.enable()  # a native crash prints every thread's Python stack
import mxnet as mx, numpy as np
from mxnet import autograd, gluon
import horovod.mxnet as hvd
from gluon_suite.cv.data import load_digits
from gluon_suite.distributed import DistributedTrainer, HorovodCommunicator
from gluon_suite.distributed.elastic import ElasticSampler, GluonState, run
from gluon_suite.distributed.state_handlers import TrainerHandler
from gluon_suite.optim import ElasticRamp

OUT = os.environ["OUT"]; E = 3; B = 16
if os.environ.get("HANG_DUMP"):
    import faulthandler; faulthandler.dump_traceback_later(int(os.environ["HANG_DUMP"]), repeat=False)
hvd.init()
xtr, ytr = load_digits("train"); xte, yte = load_digits("test")
xtr, xte = xtr.reshape(len(xtr), -1), xte.reshape(len(xte), -1)
mx.random.seed(0)
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(64, activation="relu", in_units=64), gluon.nn.Dense(10, in_units=64))
net.initialize(mx.init.Xavier())
sched = ElasticRamp(lambda t: 0.05, ref_batch=B * 3, ramp_steps=5, global_batch=B * hvd.size())
ALGO = os.environ.get("ALGO", "sync")
WAITED = []
algo = {"algorithm": "cser", "compressor": "grbs", "ratio": 4, "period": 4} if ALGO == "cser" else {}
DTYPE = "float16" if ALGO == "fp16" else "float32"
scaler = None
if ALGO == "fp16":   # float16 (emulated) with Adam's float32 masters nested beside its moments
    from gluon_suite.distributed.loss_scale import DynamicLossScaler
    from gluon_suite.utils.devices import emulate_float16_kernels
    net.cast("float16")
    emulate_float16_kernels(net)
    scaler = DynamicLossScaler(init_scale=2.0 ** 8, window=20)
    tr = DistributedTrainer(net.collect_params(), "adam", {"lr_scheduler": sched, "multi_precision": True},
                            communicator=HorovodCommunicator())
else:
    tr = DistributedTrainer(net.collect_params(), "sgd", {"lr_scheduler": sched, "momentum": 0.9},
                            communicator=HorovodCommunicator(), **algo)
sampler = ElasticSampler(len(ytr), seed=1)
state = GluonState(net, tr, sampler, batch_size=B, epoch=0, seen=[], cur=[], sizes=[], lrs=[],
                   **(scaler.counters() if scaler else {}))
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

joins = []  # after every (re)start: epoch, position and the largest parameter gap to rank 0


@run
def train(state):
    flat = np.concatenate([p.data().asnumpy().ravel() for _, p in sorted(net.collect_params().items())])
    ref = mx.nd.array(flat)
    HorovodCommunicator().broadcast_(ref, 0, name="join.check")   # not hvd.broadcast_ (see comm.py)
    joins.append({"size": hvd.size(), "epoch": state.epoch, "processed": sampler.processed,
                  "num_update": tr._optimizer.num_update, "steps_done": len(state.lrs),
                  "max_param_diff_to_rank0": float(np.abs(ref.asnumpy() - flat).max())})
    while state.epoch < E:
        if sampler.epoch != state.epoch:
            sampler.set_epoch(state.epoch)
        while True:
            idx, cnt = sampler.next_batch(B)
            if idx is None:
                break
            glob = sampler.order()[sampler.processed:sampler.processed + cnt]
            if scaler:
                scaler.load_counters(state)
            with autograd.record():
                loss = loss_fn(net(mx.nd.array(xtr[idx], dtype=DTYPE)).astype("float32"), mx.nd.array(ytr[idx]))
                if scaler:
                    loss = loss * scaler.scale
            loss.backward()
            if scaler:
                scaler.step(tr, sampler.step_size(cnt))
                scaler.store_counters(state)
            else:
                tr.step(sampler.step_size(cnt))
            mx.nd.waitall()
            if os.environ.get("STEP_SLEEP"):
                import time; time.sleep(float(os.environ["STEP_SLEEP"]))
            if os.environ.get("WAIT_FOR_LINES") and state.epoch == 1 and not WAITED:
                # "FILE:N": at epoch 1's first step, wait (at most 120 s) until FILE has N lines:
                # a condition, not a guess at how long the run takes
                import time; path, n = os.environ["WAIT_FOR_LINES"].rsplit(":", 1); t_end = time.time() + 120
                while time.time() < t_end and (not os.path.exists(path) or len(open(path).read().split()) < int(n)):
                    time.sleep(0.1)
                WAITED.append(1)
            sampler.advance(cnt)
            state.cur = state.cur + glob.tolist()
            state.sizes = state.sizes + [hvd.size()]
            state.lrs = state.lrs + [tr.learning_rate]
            if os.environ.get("KILL") == "1" and state.epoch == 1 and hvd.rank() == 2 and hvd.size() == 3 and sampler.processed > 400 \
                    and not os.path.exists(OUT + "/killed"):
                open(OUT + "/killed", "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            if os.environ.get("ADD") == "1" and state.epoch == 1 and hvd.size() == 2 and sampler.processed > 400:
                if hvd.rank() == 0:
                    with open(OUT + "/hosts.txt", "a") as f:
                        f.write(os.environ["ADD_HOST"] + ":1\n")
                # every worker waits (committed) until Horovod reports the new host: the join then
                # happens at this step on every run, however slowly the new process starts
                state.commit()
                while True:
                    state.check_host_updates()
                    import time; time.sleep(0.2)
            state.commit()
        state.seen = state.seen + [state.cur]
        state.cur = []
        state.epoch += 1
        sampler.set_epoch(state.epoch)
        state.commit()

train(state)
acc = float((net(mx.nd.array(xte, dtype=DTYPE)).argmax(axis=1).asnumpy() == yte).mean())
flat = np.concatenate([p.data().asnumpy().ravel() for _, p in sorted(net.collect_params().items())])
ref = mx.nd.array(flat); HorovodCommunicator().broadcast_(ref, 0, name="final.check")
json.dump({"rank": hvd.rank(), "size": hvd.size(), "acc": acc, "seen": state.seen, "sizes": state.sizes,
           "lrs": state.lrs, "joins": joins, "loss_scale": scaler.counters() if scaler else None,
           "opt_arrays": len(next(h for h in state.handlers if isinstance(h, TrainerHandler)).arrays()),
           "max_param_diff_to_rank0": float(np.abs(ref.asnumpy() - flat).max())},
          open(f"{OUT}/rank{hvd.rank()}.json", "w"))
