"""The traffic line says "less" only when fewer bytes than a dense allreduce went on the wire."""
from gluon_suite.distributed.comm import traffic_line


def test_fewer_bytes_than_dense_is_less():
    assert traffic_line(1e6, 32e6).endswith("(32.0x less)")


def test_more_bytes_than_dense_is_more_never_less():
    line = traffic_line(3e6, 1e6)
    assert line.endswith("(3.0x more)") and "less" not in line


def test_within_five_percent_is_about_the_same():
    assert traffic_line(1.02e6, 1e6).endswith("(about the same)")
    assert traffic_line(1e6, 1.04e6).endswith("(about the same)")
