"""A download shows a byte bar only on a terminal: off one (a log file, a pipe) nothing is written,
so no carriage-return fragments of a bar land in logs."""
import io
import sys

from gluon_suite.model_zoo.download import _progress


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_no_bar_off_a_terminal(monkeypatch):
    monkeypatch.delenv("GLUON_SUITE_QUIET", raising=False)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with _progress(1000, "resnest14_digits") as bar:
        bar.update(400)
        bar.update(600)
    assert err.getvalue() == ""


def test_a_bar_on_a_terminal(monkeypatch):
    monkeypatch.delenv("GLUON_SUITE_QUIET", raising=False)
    monkeypatch.delenv("HOROVOD_RANK", raising=False)
    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    with _progress(1000, "resnest14_digits") as bar:
        bar.update(1000)
    assert "resnest14_digits" in err.getvalue()
