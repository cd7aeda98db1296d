"""The measured side of the what-if analyser: forward, backward and update time and the gradient
sizes of a real network on this machine."""
from .model import StepProfile


def profile_model(net, batch_size=32, image_size=224, repeats=3):
    """Measure t_f, t_b, t_opt, the gradient sizes and each gradient's ready time during backward
    (in backward order: last layer first) of the vision network
    ``net`` (a Gluon block taking ``batch_size`` x 3 x ``image_size`` x ``image_size`` images) on
    this machine's CPU. The caller builds ``net`` (e.g. with ``model_zoo.get_model``), so this
    layer never imports the zoo or the domains."""
    import time

    import mxnet as mx
    from mxnet import autograd, gluon

    net.initialize(mx.init.Xavier())
    x = mx.nd.random.uniform(shape=(batch_size, 3, image_size, image_size))
    net(x[:1])
    params = [p for p in net.collect_params().values() if p.grad_req != "null"]
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.01, "momentum": 0.9})
    tf, tb, to, ready = [], [], [], []
    for _ in range(repeats + 1):
        mx.nd.waitall()
        t0 = time.perf_counter()
        with autograd.record():
            y = net(x)
            y.wait_to_read()
            t1 = time.perf_counter()
            loss = y.sum()
        loss.backward()
        ready.append(grad_ready_times(params[::-1], t1))
        mx.nd.waitall()
        t2 = time.perf_counter()
        trainer.step(batch_size)
        mx.nd.waitall()
        t3 = time.perf_counter()
        tf.append(t1 - t0)
        tb.append(t2 - t1)
        to.append(t3 - t2)
    med = lambda v: sorted(v[1:])[len(v[1:]) // 2]  # noqa: E731
    sizes = [p.data().size * 4 for p in params][::-1]   # backward: last layer first
    return StepProfile(med(tf), med(tb), sizes, med(to),
                       ready=[med([r[k] for r in ready]) for k in range(len(sizes))])


def grad_ready_times(params, t_start):
    """Measured ready time (seconds after ``t_start``, a ``time.perf_counter()`` value) of each
    parameter's gradient, ``params`` in the order backward produces them (last layer first). Call
    right after ``loss.backward()``: MXNet computes backward asynchronously, and waiting for each
    gradient in turn returns as soon as that one is written, so each time is when the gradient
    was ready (or when the one before it was, if that was later)."""
    import time
    out = []
    for p in params:
        for g in p.list_grad():
            g.wait_to_read()
        out.append(time.perf_counter() - t_start)
    return out
