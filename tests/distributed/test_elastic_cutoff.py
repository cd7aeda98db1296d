"""An elastic worker cut off from the rendezvous server leaves the job cleanly before its reset's
hvd.init() (where Horovod's client would end the process with SIGABRT): a real server on loopback
is reached and nothing happens, a closed port or a connection that never succeeds makes it exit
with status 75 after the given number of tries and one line on stderr, one that succeeds on a later
try lets it go on, and without a server named (not an elastic horovodrun job) it does nothing."""
import socket

import pytest

from gluon_suite.distributed import elastic


class Left(Exception):
    pass


def leave(code):
    raise Left(code)


def env_of(port, addr="127.0.0.1"):
    return {"HOROVOD_GLOO_RENDEZVOUS_ADDR": addr, "HOROVOD_GLOO_RENDEZVOUS_PORT": str(port)}


def test_a_reachable_server_lets_the_worker_reset():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        sleeps = []
        elastic.leave_if_cut_off(env_of(server.getsockname()[1]), sleep=sleeps.append, leave=leave)
        assert sleeps == []
    finally:
        server.close()


def test_a_closed_port_makes_the_worker_leave_with_status_75(capfd):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                   # nothing listens there now: connection refused
    sleeps = []
    with pytest.raises(Left) as info:
        elastic.leave_if_cut_off(env_of(port), tries=3, wait_s=0.2, sleep=sleeps.append, leave=leave)
    assert info.value.args == (75,) == (elastic.EXIT_CUT_OFF,)
    assert sleeps == [0.2, 0.2]                 # 3 tries, 2 waits between them
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and f"rendezvous server 127.0.0.1:{port} (3 tries" in err
    assert "leaves the job" in err


def test_a_connection_that_comes_back_within_the_tries_lets_the_worker_go_on():
    calls = []

    class Conn:
        def close(self):
            calls.append("closed")

    def connect(where, timeout):
        calls.append((where, timeout))
        if len(calls) < 3:
            raise socket.timeout("timed out")
        return Conn()
    elastic.leave_if_cut_off(env_of(29500, "10.1.2.3"), tries=5, wait_s=1.5, connect=connect,
                             sleep=lambda s: None, leave=leave)
    assert calls == [(("10.1.2.3", 29500), 1.5)] * 2 + [(("10.1.2.3", 29500), 1.5), "closed"]


def test_no_server_named_means_nothing_to_check():
    def connect(*a, **k):
        raise AssertionError("no connection should be tried")
    elastic.leave_if_cut_off({}, connect=connect, leave=leave)
    elastic.leave_if_cut_off({"HOROVOD_GLOO_RENDEZVOUS_ADDR": "10.0.0.1"}, connect=connect, leave=leave)
