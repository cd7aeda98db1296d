"""Several GPUs per host: the flat ring and the hierarchical allreduce against step times computed
by hand."""
import pytest

from gluon_suite.utils import UserError
from gluon_suite.whatif import StepProfile, allreduce_s, predict

MB = 1e6


def test_two_hosts_of_two_gpus():
    # 100 MB, network 1 GB/s, intra-host 10 GB/s, no latency.
    # flat ring over 4 GPUs: 2*3/4 * 0.1 s = 0.15 s, each host's link sends 150 MB.
    # hierarchical: in-host reduce + broadcast 2*1/2 * 100 MB / 10 GB/s = 0.01 s, ring over the 2
    # hosts 2*1/2 * 100 MB / 1 GB/s = 0.1 s: 0.11 s, each host's link sends 100 MB.
    t, wire = allreduce_s(100 * MB, 4, 1e9, 0.0, gpus_per_host=2, intra_bandwidth=10e9, topology="flat")
    assert t == pytest.approx(0.15) and wire == pytest.approx(150 * MB)
    t, wire = allreduce_s(100 * MB, 4, 1e9, 0.0, gpus_per_host=2, intra_bandwidth=10e9, topology="hierarchical")
    assert t == pytest.approx(0.11) and wire == pytest.approx(100 * MB)
    # latency 10 us: flat 2*(4-1) messages, hierarchical 2*(2-1) in the host + 2*(2-1) across
    assert allreduce_s(100 * MB, 4, 1e9, 10e-6, gpus_per_host=2, intra_bandwidth=10e9,
                       topology="flat")[0] == pytest.approx(0.15006)
    assert allreduce_s(100 * MB, 4, 1e9, 10e-6, gpus_per_host=2, intra_bandwidth=10e9,
                       topology="hierarchical")[0] == pytest.approx(0.11004)


def test_eight_hosts_of_eight_gpus():
    # 100 MB, 10 Gbit/s = 1.25 GB/s between hosts, NVLink 150 GB/s, 5 us per message.
    # flat: 2*63/64 * 0.1/1.25 = 0.1575 s + 126 * 5 us = 0.15813 s
    # hierarchical: 2*7/8 * 0.1/150 = 1.16667 ms + 14 * 5 us, + 2*7/8 * 0.1/1.25 = 0.14 s + 14 * 5 us
    flat, _ = allreduce_s(100 * MB, 64, 1.25e9, 5e-6, gpus_per_host=8, intra_bandwidth=150e9, topology="flat")
    hier, wire = allreduce_s(100 * MB, 64, 1.25e9, 5e-6, gpus_per_host=8, intra_bandwidth=150e9,
                             topology="hierarchical")
    assert flat == pytest.approx(0.15813)
    assert hier == pytest.approx(0.0011666667 + 0.00007 + 0.14 + 0.00007)
    assert wire == pytest.approx(2 * 7 / 8 * 100 * MB)


def test_step_time_and_best_topology():
    # one 100 MB tensor ready at the end of backward (30 + 60 ms); 2 hosts x 2 GPUs as above:
    # hierarchical step 0.09 + 0.11 = 0.20 s (SF 0.45), flat 0.09 + 0.15 = 0.24 s; 'best' is the first
    p = StepProfile(0.03, 0.06, [100 * MB], ready=[0.06])
    kw = dict(latency=0.0, gpus_per_host=2, intra_bandwidth=10e9)
    h = predict(p, 4, 1e9, topology="hierarchical", **kw)
    f = predict(p, 4, 1e9, topology="flat", **kw)
    b = predict(p, 4, 1e9, topology="best", **kw)
    assert h["step_s"] == pytest.approx(0.20) and h["scaling_factor"] == pytest.approx(0.45)
    assert f["step_s"] == pytest.approx(0.24)
    assert b["topology"] == "hierarchical" and b["step_s"] == pytest.approx(0.20)
    # utilisation: 100 MB on the host's link in 0.2 s at 1 GB/s = 0.5
    assert h["network_utilisation"] == pytest.approx(0.5)


def test_one_host_uses_only_the_intra_host_link():
    # 8 GPUs in one host at 10 GB/s: 2*7/8 * 100 MB / 10 GB/s = 17.5 ms whatever the network; no
    # byte on the network
    p = StepProfile(0.03, 0.06, [100 * MB], ready=[0.06])
    for bw in (1e6, 1e9):
        r = predict(p, 8, bw, latency=0.0, gpus_per_host=8, intra_bandwidth=10e9)
        assert r["step_s"] == pytest.approx(0.09 + 0.0175) and r["network_utilisation"] == 0.0


def test_one_gpu_per_host_is_the_plain_ring():
    # 4 hosts of one GPU: 2*3/4 * 100 MB / 1 GB/s = 0.15 s whichever topology is asked for
    p = StepProfile(0.03, 0.06, [100 * MB], ready=[0.06])
    for topo in ("flat", "hierarchical", "best"):
        assert predict(p, 4, 1e9, latency=0.0, topology=topo)["step_s"] == pytest.approx(0.24)


def test_workers_must_fill_the_hosts():
    with pytest.raises(UserError, match="10 workers do not fill hosts of 8 GPUs"):
        predict(StepProfile(0.1, 0.1, [MB]), 10, 1e9, gpus_per_host=8)
    with pytest.raises(UserError, match="intra-host bandwidth must be > 0"):
        predict(StepProfile(0.1, 0.1, [MB]), 16, 1e9, gpus_per_host=8, intra_bandwidth=0)
