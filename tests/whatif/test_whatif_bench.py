"""The balanced what-if bench's calibration of gamma (the allreduce's local time per byte) against
hand-computed values."""

import pytest

from ..conftest import load_script

bench = load_script("bench/whatif_validation.py")


def test_gamma_is_the_time_beyond_the_wire_per_bucket_byte():
    # 2 hosts, buckets of 6 MB and 1 MB at 1 GB/s: wire 6 ms + 1 ms, latency 2 x 0.1 ms per bucket:
    # 7.4 ms. An allreduce of 14.4 ms leaves 7 ms for 7 MB: 1 ns per byte.
    gamma, wire = bench.gamma_from(0.0144, [6e6, 1e6], 2, 1e9)
    assert wire == pytest.approx(0.0074) and gamma == pytest.approx(1e-9)
    # 4 hosts send 2(n-1)/n = 1.5 times each bucket: wire 10.5 ms + 6 x 0.1 ms x 2 buckets
    gamma, wire = bench.gamma_from(0.0187, [6e6, 1e6], 4, 1e9)
    assert wire == pytest.approx(0.0117) and gamma == pytest.approx(1e-9)
    # an allreduce faster than the socket's wire time gives 0, not a negative cost
    assert bench.gamma_from(0.001, [6e6, 1e6], 2, 1e9)[0] == 0.0
