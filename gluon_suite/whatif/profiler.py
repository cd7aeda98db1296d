"""The measured side of the what-if analyser: forward, backward and update time and the gradient
sizes of a real network on this machine."""
from .model import StepProfile


def profile_model(net, batch_size=32, image_size=224, repeats=3):
    """Measure t_f, t_b, t_opt and the gradient sizes (in backward order) of the vision network
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
    tf, tb, to = [], [], []
    for _ in range(repeats + 1):
        mx.nd.waitall()
        t0 = time.perf_counter()
        with autograd.record():
            y = net(x)
            y.wait_to_read()
            t1 = time.perf_counter()
            loss = y.sum()
        loss.backward()
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
    return StepProfile(med(tf), med(tb), sizes, med(to))
