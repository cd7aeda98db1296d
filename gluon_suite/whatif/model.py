"""Is the network the bottleneck? A what-if model of one data-parallel training step (docs/methods.md, "What-if").

Per step: forward time t_f, backward time t_b, optimizer time t_opt, and gradient tensors that
become ready during backward in reverse layer order. Tensors are fused into buckets of up to the
fusion buffer size (Horovod's default: 64 MB); a bucket is ready when its last tensor is. Ring
allreduce of a bucket of s bytes over n workers at bandwidth BW (bytes/s) with per-message latency
alpha takes

    T = 2(n-1)/n * s/BW + 2(n-1) * alpha

Communication is FIFO and overlaps backward: bucket k starts at max(ready_k, end_{k-1}). Then

    step = max(t_f + t_b, end of the last bucket) + t_opt,   SF = (t_f + t_b + t_opt) / step

(SF: scaling factor, throughput with n workers over n times one worker's). Network utilisation
is the bytes a worker's link carries in a step over what the link could carry in that time.

Compression by ratio c, per bucket, as the suite's trainer does it (``distributed/buckets.py``,
``algorithms.py``): the buckets are laid out on the dense gradients, so their boundaries and ready
times do not depend on c, and each bucket's dense vector is compressed and sent as s/c bytes.
Compression compute (``compress_s_per_byte``, kc seconds per dense byte, 0 unless given; a dense
step passes 0) runs on the worker's device bucket after bucket, beside backward (it does not slow
it), and holds back only its own bucket's transfer:

    compressed_k = max(ready_k, compressed_{k-1}) + s_k * kc,   bucket k starts at max(compressed_k, end_{k-1})

At a higher ratio every transfer is no longer and takes no more CPU, and no bucket starts later,
so the step time does not rise with c (``min_ratio`` relies on it). Fusing the compressed tensors
instead (more tensors per bucket at a higher ratio, each bucket ready later) is not what the
trainer does, and made a 2x compression predict a slower step than none.

Gradient ready times: when not measured per layer, backward is assumed to produce gradient bytes
at a uniform rate in reverse layer order (the last layer's gradients first).

Communication's own CPU cost (``StepProfile.comm_cpu_s_per_byte``, CPU seconds per byte a worker
sends, 0 by default): on a worker without a spare core (the sockets, the reductions and the copies
run on the cores that compute uses), a transfer of w wire bytes takes c = w * kappa CPU seconds
and lasts max(T, c); while it runs, compute gets the rest of the core, 1 - c / max(T, c), so a
transfer that overlaps backward slows backward down, and the buckets after it become ready later
(ready and compressed times above are then times of compute, which runs at that reduced speed
during a transfer, compression included). With kappa = 0 this is the model above.
``bench/whatif_validation.py`` measures kappa as the process's CPU time during the gradient
allreduce divided by the bytes it sent.

The allreduce's local work (``StepProfile.allreduce_local_s_per_byte``, gamma, 0 by default): the
copies into and out of the fusion buffer, the reductions and the socket calls take time even on a
free network. As in the alpha-beta-gamma cost model of collectives (Thakur, Rabenseifner and Gropp,
2005), this time adds to the transfer's: a bucket of s bytes takes T + s * gamma. Gamma depends on
the hosts and the number of workers, not on the link: measure it once on the cluster with the link
unthrottled (``bench/whatif_validation.py`` does, on the testbed), as the allreduce's time there
minus its wire time at that speed, per byte of the bucket.

Several GPUs per host (``gpus_per_host`` G > 1, ``workers`` N = H hosts x G): each host has one
network link of ``bandwidth`` B and an intra-host link (NVLink/PCIe) of ``intra_bandwidth`` B_i.
Two ways to allreduce a bucket of s bytes:

- flat: one ring over all N GPUs, ordered host by host, so one ring edge per host crosses the
  network and every step waits for it: T = 2(N-1)/N * s/B + 2(N-1) * alpha (B_i when H = 1);
  each host's link carries 2(N-1)/N * s;
- hierarchical (Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE, NCCL's tree/ring split): reduce within
  the host (a reduce-scatter, (G-1)/G * s/B_i), ring allreduce among the H hosts
  (2(H-1)/H * s/B, the host's G shards share its link), broadcast within the host (an all-gather,
  (G-1)/G * s/B_i):
  T = 2(G-1)/G * s/B_i + 2(G-1) * alpha + 2(H-1)/H * s/B + 2(H-1) * alpha;
  each host's link carries 2(H-1)/H * s.

Gamma adds s * gamma to either. With G = 1 both are the ring above.
"""
from dataclasses import dataclass, field

from ..utils.errors import UserError


@dataclass
class StepProfile:
    """Compute times (seconds) and gradient tensor sizes (bytes, in the order backward produces
    them: last layer first); ``ready`` optionally gives each tensor's ready time from the start of
    backward."""
    forward_s: float
    backward_s: float
    grad_bytes: list
    optimizer_s: float = 0.0
    ready: list = field(default=None)
    comm_cpu_s_per_byte: float = 0.0
    allreduce_local_s_per_byte: float = 0.0

    def ready_times(self):
        """Ready time of each gradient tensor, measured from the start of the step."""
        if self.ready is not None:
            return [self.forward_s + r for r in self.ready]
        total = float(sum(self.grad_bytes)) or 1.0
        out, acc = [], 0.0
        for b in self.grad_bytes:
            acc += b
            out.append(self.forward_s + self.backward_s * acc / total)
        return out


def fuse(sizes, ready, fusion_bytes):
    """Group consecutive tensors into buckets of at most ``fusion_bytes`` (a tensor larger than
    the buffer is a bucket of its own); returns ``[(bytes, ready_time)]``."""
    buckets, cur, cur_ready = [], 0, 0.0
    for s, r in zip(sizes, ready):
        if cur and cur + s > fusion_bytes:
            buckets.append((cur, cur_ready))
            cur = 0
        cur += s
        cur_ready = r
    if cur:
        buckets.append((cur, cur_ready))
    return buckets


def ring_allreduce_s(nbytes, workers, bandwidth, latency, local_s_per_byte=0.0):
    """Seconds for a ring allreduce of ``nbytes``: 2(n-1)/n * bytes/BW + 2(n-1) * latency, plus
    ``local_s_per_byte`` (gamma) per byte for the local copies and reductions."""
    n = workers
    if n == 1:
        return 0.0
    return 2.0 * (n - 1) / n * nbytes / bandwidth + 2.0 * (n - 1) * latency + nbytes * local_s_per_byte


TOPOLOGIES = ("hierarchical", "flat")


def allreduce_s(nbytes, workers, bandwidth, latency, local_s_per_byte=0.0, gpus_per_host=1,
                intra_bandwidth=None, topology="hierarchical"):
    """Seconds for an allreduce of ``nbytes`` over ``workers`` GPUs, ``gpus_per_host`` per host,
    with ``topology`` 'flat' (one ring over all GPUs) or 'hierarchical' (reduce in the host, ring
    across hosts, broadcast in the host); formulas in the module docstring. Returns
    ``(seconds, bytes each host's network link sends)``."""
    n, g = int(workers), int(gpus_per_host)
    h = n // g
    if n == 1:
        return 0.0, 0.0
    if g == 1:
        return ring_allreduce_s(nbytes, n, bandwidth, latency, local_s_per_byte), 2.0 * (n - 1) / n * nbytes
    bi = intra_bandwidth if intra_bandwidth is not None else bandwidth
    if topology == "flat":
        link = bandwidth if h > 1 else bi
        t = 2.0 * (n - 1) / n * nbytes / link + 2.0 * (n - 1) * latency
        wire = 2.0 * (n - 1) / n * nbytes if h > 1 else 0.0
    elif topology == "hierarchical":
        t = 2.0 * (g - 1) / g * nbytes / bi + 2.0 * (g - 1) * latency
        wire = 0.0
        if h > 1:
            t += 2.0 * (h - 1) / h * nbytes / bandwidth + 2.0 * (h - 1) * latency
            wire = 2.0 * (h - 1) / h * nbytes
    else:
        raise UserError(f"unknown topology {topology!r}; use one of {', '.join(TOPOLOGIES)}")
    return t + nbytes * local_s_per_byte, wire


def check(workers, bandwidth, ratio=1.0, gpus_per_host=1, intra_bandwidth=None):
    """Reject impossible inputs with the valid range."""
    if int(workers) != workers or workers < 1:
        raise UserError(f"workers must be an integer >= 1, got {workers}")
    if not bandwidth > 0:
        raise UserError(f"bandwidth must be > 0 (bytes per second), got {bandwidth}")
    if not ratio >= 1:
        raise UserError(f"compression ratio must be >= 1, got {ratio}")
    if int(gpus_per_host) != gpus_per_host or gpus_per_host < 1:
        raise UserError(f"GPUs per host must be an integer >= 1, got {gpus_per_host}")
    if workers % gpus_per_host:
        raise UserError(f"{workers} workers do not fill hosts of {gpus_per_host} GPUs: give a multiple of "
                        f"{gpus_per_host} workers (or another --gpus-per-host)")
    if intra_bandwidth is not None and not intra_bandwidth > 0:
        raise UserError(f"intra-host bandwidth must be > 0 (bytes per second), got {intra_bandwidth}")


def predict(profile, workers, bandwidth, latency=5e-6, ratio=1.0, fusion_bytes=64 << 20,
            compress_s_per_byte=0.0, gpus_per_host=1, intra_bandwidth=None, topology="hierarchical"):
    """Predicted step time, scaling factor and network utilisation for ``workers`` workers on links
    of ``bandwidth`` bytes/s (``float('inf')`` allowed), ``gpus_per_host`` of them per host with an
    intra-host link of ``intra_bandwidth`` bytes/s and the allreduce ``topology`` ('flat',
    'hierarchical' or 'best': the faster of the two), every bucket compressed by ``ratio`` (>= 1;
    module docstring). Returns a dict."""
    check(workers, bandwidth, ratio, gpus_per_host, intra_bandwidth)
    return predict_any_ratio(profile, workers, bandwidth, latency, ratio, fusion_bytes, compress_s_per_byte,
                             gpus_per_host, intra_bandwidth, topology)


def predict_any_ratio(profile, workers, bandwidth, latency=5e-6, ratio=1.0, fusion_bytes=64 << 20,
                      compress_s_per_byte=0.0, gpus_per_host=1, intra_bandwidth=None, topology="hierarchical"):
    """``predict`` for any ``ratio`` > 0: below 1 a step sends more than the dense bytes (CSER's
    step that sends the update and a dense error, ``advise``); ``inf``: a step that sends nothing
    (a local step) and issues no collective."""
    if topology == "best":
        runs = [predict_any_ratio(profile, workers, bandwidth, latency, ratio, fusion_bytes, compress_s_per_byte,
                                  gpus_per_host, intra_bandwidth, t) for t in TOPOLOGIES]
        return min(runs, key=lambda r: r["step_s"])
    check(workers, bandwidth, 1.0, gpus_per_host, intra_bandwidth)
    if not ratio > 0:
        raise UserError(f"compression ratio must be > 0, got {ratio}")
    compute = profile.forward_s + profile.backward_s
    kc = float(compress_s_per_byte or 0.0)
    kappa = float(profile.comm_cpu_s_per_byte or 0.0)
    gamma = float(profile.allreduce_local_s_per_byte or 0.0)
    # time t and compute done w (seconds of uncontended compute, compression's included): a bucket
    # can go when w reaches its compressed time; FIFO transfers; during a transfer compute runs at
    # 1 - (its CPU share). w is not capped at the end of backward, so that compression after it
    # runs beside the transfers still going (with kappa = 0, w equals t)
    t = w = wire = done = 0.0
    buckets = fuse(profile.grad_bytes, profile.ready_times(), fusion_bytes) if ratio != float("inf") else []
    for dense, ready in buckets:
        done = max(ready, done) + dense * kc    # the bucket compressed, after the bucket before it
        if w < done:                            # no transfer runs between the last one's end and this
            t, w = t + (done - w), done
        comm, sent = allreduce_s(dense / ratio, workers, bandwidth, latency, gamma, gpus_per_host,
                                 intra_bandwidth, topology)
        cpu = kappa * sent
        span = max(comm, cpu)
        speed = 1.0 - cpu / span if span > 0 else 1.0
        w += span * speed
        t += span
        wire += sent
    end = t                                     # the last transfer's end
    step = t + max(0.0, compute - w) + profile.optimizer_s
    base = compute + profile.optimizer_s
    util = 0.0 if bandwidth == float("inf") or step == 0 else wire / (bandwidth * step)
    return {"workers": workers, "bandwidth": bandwidth, "ratio": ratio, "step_s": step,
            "scaling_factor": base / step if step else 1.0, "network_utilisation": util,
            "comm_end_s": end, "wire_bytes": wire, "gpus_per_host": gpus_per_host,
            "topology": topology if gpus_per_host > 1 else "ring"}


def min_ratio(profile, workers, bandwidth, target_sf, latency=5e-6, fusion_bytes=64 << 20,
              max_ratio=4096.0, **cluster):
    """The smallest compression ratio (to 1%) whose predicted scaling factor reaches ``target_sf``,
    or None when even ``max_ratio`` does not (latency-bound). ``cluster``: ``gpus_per_host``,
    ``intra_bandwidth``, ``topology`` as for ``predict``.

    A faster link never needs more: at a fixed ratio the predicted scaling factor does not fall as
    the bandwidth rises (every transfer gets shorter), so the bisection, which only compares the
    scaling factor at its midpoints with the target, can only branch lower at a higher bandwidth.
    The bisection assumes that the scaling factor does not fall as the ratio rises, which holds:
    the buckets are laid out on the dense gradients and each is compressed (module docstring), so
    a higher ratio only shortens transfers."""
    if not 0 < target_sf <= 1:
        raise UserError(f"target scaling factor must be in (0, 1], got {target_sf}")
    sf = lambda c: predict(profile, workers, bandwidth, latency, c, fusion_bytes, **cluster)["scaling_factor"]  # noqa
    if sf(1.0) >= target_sf:
        return 1.0
    if sf(max_ratio) < target_sf:
        return None
    lo, hi = 1.0, max_ratio
    while hi / lo > 1.01:
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if sf(mid) < target_sf else (lo, mid)
    return hi
