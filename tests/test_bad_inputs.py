"""Bad inputs at every entry point end with one line on stderr naming the input, the problem and
the fix, the documented exit code (2: bad input, 1: a valid request that could not finish), no
traceback and nothing half-written (docs/getting_started.md, "Exit codes").

Most cases run a script's ``main`` in-process through ``run_cli`` (what ``python script.py`` does);
a few run as real subprocesses to show the same end to end.
"""
import json
import os
import resource
import signal
import subprocess
import sys

import pytest

from gluon_suite.utils import run_cli

from .conftest import REPO, load_script

SCRIPTS = {
    "cls": "scripts/cv/train_classification.py", "digits": "scripts/cv/train_digits.py",
    "eval": "scripts/cv/evaluate.py", "bert": "scripts/nlp/pretrain_bert.py",
    "ftc": "scripts/nlp/finetune_classification.py", "squad": "scripts/nlp/finetune_squad.py",
    "node": "scripts/graph/train_node_classification.py", "graph": "scripts/graph/train_graph_classification.py",
}
FIX_WORDS = ("use", "give", "must", "fix", "choose", "remove", "set", "did you mean", "resume", "name",
             "write", "free", "publish", "unset", "add", "raise", "rebuild", "lower", "shorten", "needs", "put")


def _main(entry):
    if entry == "cli":
        from gluon_suite.cli import main
        return main
    return load_script(SCRIPTS[entry]).main


def leftovers(folder):
    """Temporary or partial files anywhere under ``folder``."""
    bad = []
    for root, dirs, files in os.walk(folder):
        for n in files + dirs:
            if n.startswith((".tmp-", ".extract-")) or n.endswith((".tmp", ".part", ".partial")):
                bad.append(os.path.join(root, n))
    return bad


def check_one_line(code, out, err, expect_code, words):
    """The shared assertions: exit code, no traceback, one ``error:`` line with ``words`` and a fix."""
    assert "Traceback" not in out + err, out + err
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got:\n{err}"
    line = lines[0]
    assert line.startswith("error: "), line
    for w in words:
        assert w in line, f"{w!r} not in {line!r}"
    assert any(f in line.lower() for f in FIX_WORDS), f"no fix in {line!r}"
    assert code == expect_code, f"exit {code}, expected {expect_code}: {line}"
    return line


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Bad (and a few good) input files, shared by the cases."""
    import mxnet as mx
    from gluon_suite.model_zoo import get_model
    d = tmp_path_factory.mktemp("inputs")
    (d / "a_file").write_text("not a folder\n")
    (d / "empty").write_text("")
    (d / "random.params").write_bytes(os.urandom(300))
    (d / "json.params").write_text(json.dumps({"weights": [1, 2]}))
    (d / "folder.params").mkdir()
    net = get_model("digits_cnn")
    net.initialize()
    net(mx.nd.zeros((1, 1, 8, 8)))
    net.save_parameters(str(d / "digits_cnn.params"))
    data = (d / "digits_cnn.params").read_bytes()
    (d / "truncated.params").write_bytes(data[:len(data) // 2])
    mx.nd.save(str(d / "foreign.params"), {"encoder.weight": mx.nd.ones((3, 3))})
    (d / "list.yaml").write_text("- epochs\n- 3\n")
    (d / "malformed.yaml").write_text("epochs: [1,\nlr: 0.1\n")
    (d / "unknown_key.yaml").write_text("epoch: 3\n")
    (d / "epochs_text.yaml").write_text("epochs: ten\n")
    (d / "image_size_0.yaml").write_text("image_size: 0\n")
    (d / "batch_bool.yaml").write_text("batch_size: yes\n")
    (d / "resume_maybe.yaml").write_text("resume: maybe\n")
    (d / "milestones_scalar.yaml").write_text("lr_milestones: 5\n")
    (d / "binary.yaml").write_bytes(b"\xff\xfe\x00bad")
    (d / "phases_dict.yaml").write_text("phases: {seq_len: 64}\n")
    (d / "phase_no_lr.yaml").write_text("phases:\n  - {seq_len: 64, batch_size: 8, steps: 10}\n")
    (d / "phase_typo.yaml").write_text("phases:\n  - {seq_len: 64, batch_size: 8, steps: 10, lr: 0.1, warmpu: 0.1}\n")
    (d / "card_list.json").write_text("[\"digits_cnn\"]\n")
    (d / "card_bad.json").write_text("{\"name\": \"digits_cnn\",\n")
    card = {"name": "digits_cnn", "architecture": "cnn", "command": "x", "hyperparameters": {},
            "metric": {}, "training_log": "log.jsonl"}
    (d / "card.json").write_text(json.dumps(card))
    (d / "card_resnest.json").write_text(json.dumps({**card, "name": "resnest14_digits"}))
    (d / "binary.tsv").write_bytes(b"sentence\tlabel\n\xff\xfe\x00\x01\n")
    (d / "cols.tsv").write_text("text\tlabel\nhello\t1\n")
    (d / "ragged.tsv").write_text("sentence\tlabel\nhello world\t1\textra\n")
    (d / "ok.tsv").write_text("sentence\tlabel\nhello world\t1\nbye world\t0\n")
    (d / "newlabel.tsv").write_text("sentence\tlabel\nhello world\t7\n")
    (d / "bad.json").write_text("{\"data\": [\n")
    (d / "list.json").write_text("[1, 2, 3]\n")
    (d / "noqas.json").write_text(json.dumps({"data": [{"paragraphs": [{"context": "a b"}]}]}))
    squad = {"data": [{"paragraphs": [{"context": "a b", "qas": [
        {"id": "1", "question": "a?", "answers": [{"text": "a", "answer_start": 0}]}]}]}]}
    (d / "ok.json").write_text(json.dumps(squad))
    # SQuAD files whose fields have the wrong JSON type
    qa = squad["data"][0]["paragraphs"][0]["qas"][0]
    for name, bad in (("answers_str", {**qa, "answers": "a"}),
                      ("start_str", {**qa, "answers": [{"text": "a", "answer_start": "0"}]}),
                      ("qa_list", ["1", "a?"]), ("question_num", {**qa, "question": 7})):
        (d / f"{name}.json").write_text(json.dumps({"data": [{"paragraphs": [
            {"context": "a b", "qas": [qa, bad]}]}]}))
    (d / "paragraphs_obj.json").write_text(json.dumps({"data": [{"paragraphs": {"context": "a b"}}]}))
    (d / "context_list.json").write_text(json.dumps({"data": [{"paragraphs": [{"context": ["a"], "qas": []}]}]}))
    # LINQS and TU graph folders, each with one fault
    content = "p1 1 0 A\np2 0 1 B\np3 1 1 A\n"
    (d / "linqs_small").mkdir()
    (d / "linqs_small" / "cora.content").write_text(content)
    (d / "linqs_small" / "cora.cites").write_text("p1 p2\n")
    for name, cont, cites in (("linqs_dangling", content, "p1 p2\np3 p1\np9 p2\n"),
                              ("linqs_dup", content + "p2 1 1 B\n", "p1 p2\n")):
        (d / name).mkdir()
        (d / name / "cora.content").write_text(cont)
        (d / name / "cora.cites").write_text(cites)
    for name, a, ind, lab in (("tu_gap", "1, 2\n2, 1\n", "1\n1\n3\n", "0\n1\n0\n"),
                              ("tu_cross", "1, 2\n2, 3\n", "1\n1\n2\n", "0\n1\n"),
                              ("tu_order", "1, 2\n", "1\n2\n1\n", "0\n1\n"),
                              ("tu_labels", "1, 2\n", "1\n1\n2\n", "0\n")):
        (d / name).mkdir()
        for suffix, text in (("A", a), ("graph_indicator", ind), ("graph_labels", lab)):
            (d / name / f"T_{suffix}.txt").write_text(text)
    # run folders to --resume from
    for name, state in (("run_nokeys", {"epoch": 1}), ("run_badjson", None), ("run_list", [1]),
                        ("run_trunc", {"epoch": 1, "best_acc": 0.5, "history": [], "workers": 1,
                                       "elapsed_s": 1.0, "phase": 0, "step": 1}),
                        ("run_other_model", {"epoch": 1, "best_acc": 0.5, "history": [], "workers": 1}),
                        ("run_foreign", {"epoch": 1, "best_acc": 0.5, "history": [], "workers": 1})):
        r = d / name
        r.mkdir()
        if state is None:
            (r / "state.json").write_text("{\"epoch\": ")
        else:
            (r / "state.json").write_text(json.dumps(state))
        for f in ("last.rank0.params", "ckpt.rank0.params"):
            (r / f).write_bytes(data if name in ("run_other_model", "run_foreign") else data[:100])
        for f in ("last.rank0.states", "ckpt.rank0.states"):
            (r / f).write_bytes(b"x")
    (d / "run_other_model" / "config.json").write_text(json.dumps({"model": "digits_cnn"}))
    (d / "run_nostate").mkdir()
    # pretraining output folders for --init
    vocab = "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"]) + "\n"
    for name, config, ckpt in (("init_noconfig", None, data), ("init_badconfig", "{", data),
                               ("init_listconfig", "[]", data),
                               ("init_unknown_model", json.dumps({"model": "bert_2_128_3", "max_length": 64}), data),
                               ("init_random", json.dumps({"model": "bert_2_128_2", "max_length": 64}), os.urandom(64)),
                               ("init_foreign", json.dumps({"model": "bert_2_128_2", "max_length": 64}), data),
                               ("init_novocab", json.dumps({"model": "bert_2_128_2", "max_length": 64}), data)):
        r = d / name
        r.mkdir()
        if config is not None:
            (r / "config.json").write_text(config)
        if name != "init_novocab":
            (r / "vocab.txt").write_text(vocab)
        (r / "ckpt.rank0.params").write_bytes(ckpt)
    (d / "store").mkdir()
    return d


@pytest.fixture
def run(files, capfd, monkeypatch, tmp_path):
    """``run(entry, *args, env={...})`` -> ``(code, stdout, stderr)``; ``{F}`` in args is the input
    folder, ``{T}`` this test's temporary folder."""
    def _run(entry, *args, env=None):
        argv = [a.replace("{F}", str(files)).replace("{T}", str(tmp_path)) for a in args]
        for k, v in (env or {}).items():
            monkeypatch.setenv(k, v.replace("{F}", str(files)).replace("{T}", str(tmp_path)))
        monkeypatch.setattr(sys, "argv", [os.path.basename(SCRIPTS.get(entry, "gluon-suite")), *argv])
        capfd.readouterr()
        with pytest.raises(SystemExit) as ei:
            run_cli(_main(entry), argv)
        out, err = capfd.readouterr()
        return ei.value.code, out, err
    return _run


# (entry, args, env, exit code, words the line must hold)
B = 2
CASES = [
    # ---- gluon-suite: usage, info, zoo list ---------------------------------------------------------
    ("cli", ["bogus"], None, B, ["bogus", "usage: gluon-suite"]),
    ("cli", ["--frobnicate", "info"], None, B, ["--frobnicate"]),
    ("cli", ["info", "--nope"], None, B, ["--nope"]),
    ("cli", ["info", "--json=yes"], None, B, ["--json", "no value"]),
    ("cli", ["zoo"], None, B, ["ZOO_COMMAND"]),
    ("cli", ["zoo", "lst"], None, B, ["lst", "did you mean 'list'"]),
    ("cli", ["zoo", "list", "resnet19"], None, B, ["resnet19", "did you mean"]),
    ("cli", ["zoo", "list", "zzz*", "--pretrained"], None, B, ["zzz*", "published weights"]),
    # ---- zoo download / verify / purge --------------------------------------------------------------
    ("cli", ["zoo", "download", "digits_cnm"], None, B, ["digits_cnm", "did you mean", "digits_cnn"]),
    ("cli", ["zoo", "download", "digits_cnn", "--root", "{T}"], None, B, ["digits_cnn", "no published checkpoint"]),
    ("cli", ["zoo", "download", "digits_cnn", "--root", "{F}/a_file"], None, B, ["--root", "a_file", "is a file"]),
    ("cli", ["zoo", "download", "digits_cnn", "--root", "{F}/a_file/sub"], None, B, ["--root", "cannot be created"]),
    ("cli", ["zoo", "download"], None, B, ["name", "required"]),
    ("cli", ["zoo", "verify", "--root", "{T}/missing"], None, B, ["--root", "missing", "does not exist"]),
    ("cli", ["zoo", "verify", "--root", "{F}/a_file"], None, B, ["--root", "a_file", "not a folder"]),
    ("cli", ["zoo", "purge", "--root", "{T}/missing"], None, B, ["--root", "does not exist"]),
    ("cli", ["zoo", "purge", "--root", "{F}/a_file"], None, B, ["--root", "not a folder"]),
    # ---- zoo publish ---------------------------------------------------------------------------------
    ("cli", ["zoo", "publish", "{T}/none.params", "--name", "digits_cnn", "--card", "{F}/card.json",
             "--store", "{T}/s"], None, B, ["checkpoint", "none.params", "does not exist"]),
    ("cli", ["zoo", "publish", "{F}/folder.params", "--name", "digits_cnn", "--card", "{F}/card.json",
             "--store", "{T}/s"], None, B, ["folder.params", "is a folder"]),
    ("cli", ["zoo", "publish", "{F}/random.params", "--name", "digits_cnn", "--card", "{F}/card.json",
             "--store", "{T}/s"], None, B, ["random.params", "not an MXNet parameter file"]),
    ("cli", ["zoo", "publish", "{F}/json.params", "--name", "digits_cnn", "--card", "{F}/card.json",
             "--store", "{T}/s"], None, B, ["json.params", "not an MXNet parameter file"]),
    ("cli", ["zoo", "publish", "{F}/truncated.params", "--name", "digits_cnn", "--card", "{F}/card.json",
             "--store", "{T}/s"], None, B, ["truncated.params", "truncated"]),
    ("cli", ["zoo", "publish", "{F}/digits_cnn.params", "--name", "digits_cnx", "--card", "{F}/card.json",
             "--store", "{T}/s"], None, B, ["digits_cnx", "did you mean", "digits_cnn"]),
    ("cli", ["zoo", "publish", "{F}/digits_cnn.params", "--name", "resnest14_digits", "--card",
             "{F}/card_resnest.json", "--store", "{T}/s"], None, B, ["digits_cnn.params", "resnest14_digits",
                                                                        "does not hold the parameters"]),
    ("cli", ["zoo", "publish", "{F}/foreign.params", "--name", "digits_cnn", "--card", "{F}/card.json",
             "--store", "{T}/s"], None, B, ["foreign.params", "does not hold the parameters"]),
    ("cli", ["zoo", "publish", "{F}/digits_cnn.params", "--name", "digits_cnn", "--card", "{F}/card_list.json",
             "--store", "{T}/s"], None, B, ["card_list.json", "JSON list", "object"]),
    ("cli", ["zoo", "publish", "{F}/digits_cnn.params", "--name", "digits_cnn", "--card", "{F}/card_bad.json",
             "--store", "{T}/s"], None, B, ["card_bad.json", "not valid JSON", "line 2"]),
    ("cli", ["zoo", "publish", "{F}/digits_cnn.params", "--name", "digits_cnn", "--card", "{T}/no.json",
             "--store", "{T}/s"], None, B, ["--card", "no.json", "does not exist"]),
    ("cli", ["zoo", "publish", "{F}/digits_cnn.params", "--name", "digits_cnn", "--card",
             "{F}/card_resnest.json", "--store", "{T}/s"], None, B, ["card_resnest.json", "resnest14_digits"]),
    ("cli", ["zoo", "publish", "{F}/digits_cnn.params", "--name", "digits_cnn", "--card", "{F}/card.json",
             "--store", "{F}/a_file"], None, B, ["--store", "a_file", "is a file"]),
    ("cli", ["zoo", "publish", "{F}/digits_cnn.params", "--name", "digits_cnn", "--card", "{F}/card.json",
             "--store", "{F}/a_file/sub"], None, B, ["--store", "cannot be created"]),
    ("cli", ["zoo", "publish", "{F}/digits_cnn.params", "--name", "digits_cnn", "--card", "{F}/card.json",
             "--store", "{T}/s", "--url", "ftp://host/zoo"], None, B, ["--url", "ftp://host/zoo"]),
    ("cli", ["zoo", "publish", "{F}/digits_cnn.params", "--card", "{F}/card.json", "--store", "{T}/s"],
     None, B, ["--name", "required"]),
    # ---- whatif ---------------------------------------------------------------------------------------
    ("cli", ["whatif", "--forward-ms", "30", "--backward-ms", "60"], None, B, ["--param-mb", "give"]),
    ("cli", ["whatif", "--forward-ms", "-1", "--backward-ms", "1", "--param-mb", "1"], None, B, ["--forward-ms", "> 0"]),
    ("cli", ["whatif", "--forward-ms", "1", "--backward-ms", "1", "--param-mb", "-5"], None, B, ["--param-mb", "-5"]),
    ("cli", ["whatif", "--forward-ms", "1", "--backward-ms", "1", "--param-mb", "1", "--latency-us", "0"],
     None, B, ["--latency-us", "> 0"]),
    ("cli", ["whatif", "--forward-ms", "1", "--backward-ms", "1", "--param-mb", "1", "--fusion-mb", "0"],
     None, B, ["--fusion-mb", "> 0"]),
    ("cli", ["whatif", "--forward-ms", "1", "--backward-ms", "1", "--param-mb", "1", "--workers", "0"],
     None, B, ["--workers", ">= 1"]),
    ("cli", ["whatif", "--forward-ms", "1", "--backward-ms", "1", "--param-mb", "1", "--bandwidth-gbps", "-1"],
     None, B, ["--bandwidth-gbps", "> 0"]),
    ("cli", ["whatif", "--forward-ms", "1", "--backward-ms", "1", "--param-mb", "1", "--ratios", "0.5"],
     None, B, ["--ratios", ">= 1"]),
    ("cli", ["whatif", "--forward-ms", "1", "--backward-ms", "1", "--param-mb", "1", "--target-sf", "1.5"],
     None, B, ["--target-sf", "<= 1"]),
    ("cli", ["whatif", "--forward-ms", "1", "--backward-ms", "1", "--param-mb", "1", "--tensors", "0"],
     None, B, ["--tensors", ">= 1"]),
    ("cli", ["whatif", "--forward-ms", "x", "--backward-ms", "1", "--param-mb", "1"], None, B, ["--forward-ms", "'x'"]),
    ("cli", ["whatif", "--model", "resnet19"], None, B, ["resnet19", "did you mean"]),
    ("cli", ["whatif", "--model", "digits_cnn", "--batch-size", "0"], None, B, ["--batch-size", ">= 1"]),
    ("cli", ["whatif", "--model", "digits_cnn", "--image-size", "-8"], None, B, ["--image-size", ">= 1"]),
    ("cli", ["whatif", "--forward-ms", "1", "--backward-ms", "1", "--param-mb", "1", "--json", "{F}/a_file/x.json"],
     None, B, ["--json", "cannot be created"]),
    ("cli", ["whatif", "--forward-ms", "1", "--backward-ms", "1", "--param-mb", "1", "--plot", "{T}/plot.xyz"],
     None, B, ["--plot", ".png"]),
    ("cli", ["whatif", "--forward-ms", "1", "--backward-ms", "1", "--param-mb", "1", "--plot", "{F}"],
     None, B, ["--plot", "is a folder"]),
    # ---- launch -------------------------------------------------------------------------------------
    ("cli", ["launch", "-np", "0", "--", "true"], None, B, ["-np", ">= 1"]),
    ("cli", ["launch", "-np", "two", "--", "true"], None, B, ["-np", "'two'"]),
    ("cli", ["launch", "--min-np", "0", "--host-discovery-script", "true", "--", "true"], None, B, ["--min-np", ">= 1"]),
    ("cli", ["launch", "--min-np", "3", "--max-np", "2", "--host-discovery-script", "true", "--", "true"],
     None, B, ["--min-np 3", "--max-np 2"]),
    ("cli", ["launch", "--elastic-timeout", "0", "--", "true"], None, B, ["--elastic-timeout", ">= 1"]),
    ("cli", ["launch", "-np", "2"], None, B, ["no command", "put it after --"]),
    ("cli", ["launch", "--min-np", "2", "--", "true"], None, B, ["--host-discovery-script"]),
    # ---- environment ----------------------------------------------------------------------------------
    ("cli", ["zoo", "list"], {"GLUON_SUITE_OFFLINE": "maybe"}, B, ["GLUON_SUITE_OFFLINE", "'maybe'"]),
    ("cli", ["zoo", "list"], {"GLUON_SUITE_HOME": "{F}/a_file"}, B, ["GLUON_SUITE_HOME", "is a file"]),
    ("cli", ["zoo", "list"], {"GLUON_SUITE_HOME": "{F}/a_file/home"}, B, ["GLUON_SUITE_HOME", "cannot be created"]),
    ("cli", ["zoo", "list"], {"GLUON_SUITE_HOME": ""}, B, ["GLUON_SUITE_HOME", "empty"]),
    ("cli", ["zoo", "list"], {"GLUON_SUITE_RETRIES": "many"}, B, ["GLUON_SUITE_RETRIES", "whole number"]),
    ("cli", ["zoo", "list"], {"GLUON_SUITE_READ_TIMEOUT": "0"}, B, ["GLUON_SUITE_READ_TIMEOUT", "> 0"]),
    ("cli", ["zoo", "list"], {"GLUON_SUITE_BACKOFF": "-1"}, B, ["GLUON_SUITE_BACKOFF", ">= 0"]),
    ("cli", ["zoo", "list"], {"GLUON_SUITE_REPO": "host:8000/zoo"}, B, ["GLUON_SUITE_REPO", "not a URL"]),
    ("cli", ["zoo", "list"], {"GLUON_SUITE_QUIET": "sometimes"}, B, ["GLUON_SUITE_QUIET"]),
    ("cli", ["zoo", "list"], {"GLUON_SUITE_MALLOC": "of"}, B, ["GLUON_SUITE_MALLOC='of'", "on or off"]),
    ("cli", ["zoo", "list"], {"GLUON_SUITE_PROGRESS_EVERY": "abc"}, B, ["GLUON_SUITE_PROGRESS_EVERY='abc'", "<= 100"]),
    ("cli", ["zoo", "list"], {"GLUON_SUITE_GRAPH_KERNELS": "{T}/no.so"}, B, ["GLUON_SUITE_GRAPH_KERNELS", "names no file"]),
    ("node", ["--epochs", "1"], {"OMP_NUM_THREADS": "abc"}, B, ["OMP_NUM_THREADS", "'abc'"]),
    ("cls", ["--epochs", "1"], {"OMP_NUM_THREADS": "0"}, B, ["OMP_NUM_THREADS", ">= 1"]),
    # ---- train_classification: flags ------------------------------------------------------------------
    ("cls", ["--epochs", "0"], None, B, ["--epochs", ">= 1"]),
    ("cls", ["--epochz", "3"], None, B, ["--epochz", "did you mean", "--epochs"]),
    ("cls", ["--batch-size", "-1"], None, B, ["--batch-size", ">= 1"]),
    ("cls", ["--global-batch-size", "0"], None, B, ["--global-batch-size", ">= 1"]),
    ("cls", ["--num-workers", "-1"], None, B, ["--num-workers", ">= 0"]),
    ("cls", ["--image-size", "0"], None, B, ["--image-size", ">= 1"]),
    ("cls", ["--lr", "abc"], None, B, ["--lr", "'abc'"]),
    ("cls", ["--lr", "0"], None, B, ["--lr", "> 0"]),
    ("cls", ["--momentum", "1.5"], None, B, ["--momentum", "<= 1"]),
    ("cls", ["--wd", "-0.1"], None, B, ["--wd", ">= 0"]),
    ("cls", ["--label-smoothing", "1"], None, B, ["--label-smoothing", "< 1"]),
    ("cls", ["--mixup", "-1"], None, B, ["--mixup", ">= 0"]),
    ("cls", ["--warmup-epochs", "nan"], None, B, ["--warmup-epochs", "nan"]),
    ("cls", ["--ratio", "0.5"], None, B, ["--ratio", ">= 1"]),
    ("cls", ["--period", "0"], None, B, ["--period", ">= 1"]),
    ("cls", ["--ramp-steps", "0"], None, B, ["--ramp-steps", ">= 1"]),
    ("cls", ["--model", "resnest14_digit"], None, B, ["--model", "did you mean", "resnest14_digits"]),
    ("cls", ["--dataset", "mnist"], None, B, ["--dataset", "mnist", "use one of"]),
    ("cls", ["--dataset", "cifar10"], None, B, ["cifar10", "--data-dir"]),
    ("cls", ["--dataset", "cifar10", "--data-dir", "{T}/nodata"], None, B, ["--data-dir", "does not exist"]),
    ("cls", ["--optimizer", "adamm"], None, B, ["--optimizer", "adamm", "did you mean 'adam'"]),
    ("cls", ["--algorithm", "csr"], None, B, ["--algorithm", "csr", "did you mean 'cser'"]),
    ("cls", ["--compressor", "topkk"], None, B, ["--compressor", "topkk", "did you mean 'topk'"]),
    ("cls", ["--lr-mode", "linear"], None, B, ["--lr-mode", "linear"]),
    ("cls", ["--out", "{F}/a_file"], None, B, ["--out", "a_file", "is a file"]),
    ("cls", ["--out", "{F}/a_file/run"], None, B, ["--out", "cannot be created", "is a file"]),
    ("cls", ["--publish", "{F}/a_file"], None, B, ["--publish", "is a file"]),
    ("cls", ["--publish-name", "digits_cnx"], None, B, ["--publish-name", "digits_cnn"]),
    ("cls", ["--publish-url", "store"], None, B, ["--publish-url", "not a URL"]),
    ("cls", ["--card", "{F}"], None, B, ["--card", "is a folder"]),
    # ---- train_classification: --resume --------------------------------------------------------------
    ("cls", ["--resume", "maybe"], None, B, ["--resume", "maybe", "auto"]),
    ("cls", ["--resume", "{F}/run_nostate"], None, B, ["--resume", "run_nostate", "state.json"]),
    ("cls", ["--resume", "{F}/run_nokeys", "--out", "{T}/o"], None, B, ["state.json", "lacks", "best_acc"]),
    ("cls", ["--resume", "{F}/run_badjson", "--out", "{T}/o"], None, B, ["state.json", "not valid JSON"]),
    ("cls", ["--resume", "{F}/run_list", "--out", "{T}/o"], None, B, ["state.json", "JSON list"]),
    ("cls", ["--resume", "{F}/run_trunc", "--out", "{T}/o"], None, B, ["last.rank0.params", "truncated"]),
    ("cls", ["--resume", "{F}/run_other_model", "--out", "{T}/o"], None, B, ["run of model 'digits_cnn'",
                                                                            "--model digits_cnn"]),
    ("cls", ["--resume", "{F}/run_foreign", "--out", "{T}/o"], None, B, ["last.rank0.params",
                                                                        "not hold the parameters of 'resnest14_digits'"]),
    # ---- train_classification: --config --------------------------------------------------------------
    ("cls", ["--config", "{T}/none.yaml"], None, B, ["none.yaml", "does not exist"]),
    ("cls", ["--config", "{F}"], None, B, ["config file", "is a folder"]),
    ("cls", ["--config", "{F}/list.yaml"], None, B, ["list.yaml", "list", "key: value"]),
    ("cls", ["--config", "{F}/malformed.yaml"], None, B, ["malformed.yaml", "not valid YAML"]),
    ("cls", ["--config", "{F}/binary.yaml"], None, B, ["binary.yaml", "UTF-8"]),
    ("cls", ["--config", "{F}/unknown_key.yaml"], None, B, ["unknown_key.yaml", "'epoch'", "did you mean 'epochs'"]),
    ("cls", ["--config", "{F}/epochs_text.yaml"], None, B, ["epochs_text.yaml", "epochs", "'ten'"]),
    ("cls", ["--config", "{F}/image_size_0.yaml"], None, B, ["image_size_0.yaml", "image_size", ">= 1"]),
    ("cls", ["--config", "{F}/batch_bool.yaml"], None, B, ["batch_bool.yaml", "batch_size", "True"]),
    ("cls", ["--config", "{F}/resume_maybe.yaml"], None, B, ["resume_maybe.yaml", "resume", "maybe"]),
    ("cls", ["--config", "{F}/milestones_scalar.yaml"], None, B, ["lr_milestones", "must be a list"]),
    # ---- train_digits ----------------------------------------------------------------------------------
    ("digits", ["--epochs", "0"], None, B, ["--epochs", ">= 1"]),
    ("digits", ["--batch-size", "zero"], None, B, ["--batch-size", "'zero'"]),
    ("digits", ["--lr", "-0.1"], None, B, ["--lr", "> 0"]),
    ("digits", ["--out", "{F}/a_file"], None, B, ["--out", "is a file"]),
    ("digits", ["--algorithm", "bogus"], None, B, ["--algorithm", "bogus", "registered: "]),
    ("digits", ["--algorithm", "sync", "--target-sf", "0.8"], None, B,
     ["--target-sf", "--algorithm auto only", "sync"]),
    ("digits", ["--algorithm", "auto", "--target-sf", "1.5"], None, B, ["--target-sf", "<= 1"]),
    ("digits", ["--algorithm", "auto", "--auto-candidates", "sync", "dense"], None, B,
     ["--auto-candidates", "dense", "use one of"]),
    ("cls", ["--algorithm", "cser", "--auto-candidates", "sync"], None, B, ["--auto-candidates", "--algorithm auto only"]),
    ("digits", ["--algorithm", "auto", "--auto-ratios", "0.5"], None, B, ["--auto-ratios", ">= 1"]),
    ("digits", ["--algorithm", "auto", "--auto-periods", "8", "0"], None, B, ["--auto-periods", ">= 1"]),
    ("digits", ["--algorithm", "local", "--auto-periods", "16"], None, B, ["--auto-periods", "--algorithm auto only"]),
    ("digits", ["--algorithm", "auto", "--ratio", "8", "--auto-ratios", "4", "16"], None, B,
     ["--ratio", "--auto-ratios", "give one"]),
    ("digits", ["--commit-every", "0"], None, B, ["--commit-every", ">= 1"]),
    ("digits", ["--seed", "-3"], None, B, ["--seed", ">= 0"]),
    # ---- evaluate ---------------------------------------------------------------------------------------
    ("eval", [], None, B, ["--model", "required"]),
    ("eval", ["--model", "resnest14_digitz"], None, B, ["--model", "resnest14_digits"]),
    ("eval", ["--model", "digits_cnn", "--params", "{T}/none.params"], None, B, ["--params", "does not exist"]),
    ("eval", ["--model", "digits_cnn", "--params", "{F}/random.params"], None, B, ["--params", "random.params",
                                                                                  "not an MXNet parameter file"]),
    ("eval", ["--model", "digits_cnn", "--params", "{F}/json.params"], None, B, ["--params", "json.params"]),
    ("eval", ["--model", "resnest14_digits", "--params", "{F}/digits_cnn.params"], None, B,
     ["--params", "digits_cnn.params", "does not hold the parameters of 'resnest14_digits'"]),
    ("eval", ["--model", "digits_cnn", "--serve", "{T}/nostore"], None, B, ["--serve", "does not exist"]),
    ("eval", ["--model", "digits_cnn", "--dataset", "folder"], None, B, ["folder", "--data-dir"]),
    ("eval", ["--model", "digits_cnn", "--image-size", "0"], None, B, ["--image-size", ">= 1"]),
    ("eval", ["--model", "digits_cnn"], {"GLUON_SUITE_HOME": "{T}/home"}, B, ["digits_cnn", "no published checkpoint"]),
    # ---- pretrain_bert -----------------------------------------------------------------------------------
    ("bert", ["--resume", "maybe"], None, B, ["--resume", "maybe", "auto"]),
    ("bert", ["--phase", "seq_len=abc,batch_size=8,steps=1,lr=0.1"], None, B, ["--phase", "seq_len", "'abc'"]),
    ("bert", ["--phase", "seq_len=64,batch_size=0,steps=1,lr=0.1"], None, B, ["--phase", "batch_size", ">= 1"]),
    ("bert", ["--phase", "seq_len=64,batch_size=8,steps=10"], None, B, ["--phase", "lacks lr"]),
    ("bert", ["--phase", "seq_len=64;batch_size=8"], None, B, ["--phase", "seq_len", "'64;batch_size=8'"]),
    ("bert", ["--phase", "seq_len"], None, B, ["--phase", "key=value", "'seq_len'"]),
    ("bert", ["--phase", "seq_len=64,batch_size=8,steps=10,lr=0.1,warmpu=0.1"], None, B, ["warmpu", "did you mean 'warmup'"]),
    ("bert", ["--phase", "seq_len=64,batch_size=8,steps=10,lr=0.1,warmup=0.8,constant=0.5"], None, B, ["warmup + constant"]),
    ("bert", ["--phase", "seq_len=600,batch_size=8,steps=10,lr=0.1", "--max-length", "128"], None, B,
     ["seq_len 600", "--max-length"]),
    ("bert", ["--phase", "seq_len=32,batch_size=4000,steps=1,lr=0.1", "--out", "{T}/o"], None, B,
     ["phase 1", "global batch 4000", "instances", "smaller batch"]),
    ("bert", ["--phase", "seq_len=32,batch_size=8,accumulate=500,steps=1,lr=0.1", "--out", "{T}/o"], None, B,
     ["phase 1", "global batch 4000", "instances"]),
    ("bert", ["--max-length", "0"], None, B, ["--max-length", ">= 8"]),
    ("bert", ["--ckpt-every", "0"], None, B, ["--ckpt-every", ">= 1"]),
    ("bert", ["--dropout", "1.5"], None, B, ["--dropout", "< 1"]),
    ("bert", ["--corpus", "{T}/none.txt"], None, B, ["--corpus", "does not exist"]),
    ("bert", ["--corpus", "{F}"], None, B, ["--corpus", "is a folder"]),
    ("bert", ["--vocab", "{F}/random.params"], None, B, ["--vocab", "not UTF-8"]),
    ("bert", ["--model", "bert_2_128"], None, B, ["--model", "bert_2_128_2"]),
    ("bert", ["--out", "{F}/a_file"], None, B, ["--out", "is a file"]),
    ("bert", ["--config", "{F}/list.yaml"], None, B, ["list.yaml", "key: value"]),
    ("bert", ["--config", "{F}/phases_dict.yaml"], None, B, ["phases_dict.yaml", "phases", "list"]),
    ("bert", ["--config", "{F}/phase_no_lr.yaml"], None, B, ["phase_no_lr.yaml", "phase 1", "lacks lr"]),
    ("bert", ["--config", "{F}/phase_typo.yaml"], None, B, ["phase_typo.yaml", "warmpu", "did you mean 'warmup'"]),
    ("bert", ["--out", "{F}/run_nokeys", "--resume", "auto"], None, B, ["state.json", "lacks", "phase"]),
    ("bert", ["--out", "{F}/run_trunc", "--resume", "auto"], None, B, ["ckpt.rank0.params", "truncated"]),
    # ---- finetune_classification -------------------------------------------------------------------------
    ("ftc", ["--init", "{T}/noinit", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv"], None, B, ["--init", "does not exist"]),
    ("ftc", ["--init", "{F}/a_file", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv"], None, B, ["--init", "not a folder"]),
    ("ftc", ["--init", "{F}/init_noconfig", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv"], None, B,
     ["config.json", "does not exist", "pretrain_bert.py"]),
    ("ftc", ["--init", "{F}/init_badconfig", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv"], None, B,
     ["config.json", "not valid JSON"]),
    ("ftc", ["--init", "{F}/init_listconfig", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv"], None, B,
     ["config.json", "JSON list"]),
    ("ftc", ["--init", "{F}/init_unknown_model", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv"], None, B,
     ["bert_2_128_3", "did you mean"]),
    ("ftc", ["--init", "{F}/init_random", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv"], None, B,
     ["--init checkpoint", "ckpt.rank0.params", "not an MXNet parameter file"]),
    ("ftc", ["--init", "{F}/init_foreign", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv"], None, B,
     ["--init checkpoint", "does not hold the parameters of 'bert_2_128_2'"]),
    ("ftc", ["--init", "{F}/init_novocab", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv"], None, B,
     ["--init", "vocab.txt"]),
    ("ftc", ["--init", "{F}/init_foreign", "--train", "{T}/none.tsv", "--dev", "{F}/ok.tsv"], None, B,
     ["--train", "does not exist"]),
    ("ftc", ["--init", "{F}/init_foreign", "--train", "{F}", "--dev", "{F}/ok.tsv"], None, B, ["--train", "is a folder"]),
    ("ftc", ["--init", "{F}/init_foreign", "--train", "{F}/binary.tsv", "--dev", "{F}/ok.tsv"], None, B,
     ["--train", "binary.tsv", "not UTF-8"]),
    ("ftc", ["--init", "{F}/init_foreign", "--train", "{F}/empty", "--dev", "{F}/ok.tsv"], None, B,
     ["--train", "empty", "header lacks"]),
    ("ftc", ["--init", "{F}/init_foreign", "--train", "{F}/cols.tsv", "--dev", "{F}/ok.tsv"], None, B,
     ["--train", "cols.tsv", "sentence", "--text-columns"]),
    ("ftc", ["--init", "{F}/init_foreign", "--train", "{F}/ragged.tsv", "--dev", "{F}/ok.tsv"], None, B,
     ["--train", "ragged.tsv:2", "columns"]),
    ("ftc", ["--init", "{F}/init_foreign", "--train", "{F}/ok.tsv", "--dev", "{F}/newlabel.tsv"], None, B,
     ["--dev", "newlabel.tsv", "label(s) 7"]),
    ("ftc", ["--init", "{F}/init_foreign", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv", "--text-columns",
             "a", "b", "c"], None, B, ["--text-columns", "at most two"]),
    ("ftc", ["--init", "{F}/init_foreign", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv", "--max-len", "2"],
     None, B, ["--max-len", ">= 8"]),
    ("ftc", ["--init", "{F}/init_foreign", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv", "--optimizer", "adamw"],
     None, B, ["--optimizer", "adamw"]),
    ("ftc", ["--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv"], None, B, ["--init", "--model NAME --pretrained"]),
    ("ftc", ["--model", "bert_2_128_2", "--pretrained", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv"], None, B,
     ["bert_2_128_2", "no published vocabulary", "--init"]),
    ("ftc", ["--model", "bert_2_128_2_leee", "--pretrained", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv"],
     None, B, ["bert_2_128_2_leee", "did you mean", "bert_2_128_2_lee"]),
    ("ftc", ["--pretrained", "--train", "{F}/ok.tsv", "--dev", "{F}/ok.tsv"], None, B,
     ["--pretrained needs --model", "zoo list"]),
    ("squad", ["--init", "{F}/init_foreign", "--model", "bert_2_128_2_lee", "--pretrained", "--train", "{F}/ok.json",
               "--dev", "{F}/ok.json"], None, B, ["either --init", "--pretrained"]),
    # ---- finetune_squad ------------------------------------------------------------------------------------
    ("squad", ["--init", "{F}/init_foreign", "--train", "{F}/bad.json", "--dev", "{F}/ok.json"], None, B,
     ["--train", "bad.json", "not valid JSON", "SQuAD"]),
    ("squad", ["--init", "{F}/init_foreign", "--train", "{F}/list.json", "--dev", "{F}/ok.json"], None, B,
     ["--train", "list.json", "'data' list"]),
    ("squad", ["--init", "{F}/init_foreign", "--train", "{F}/ok.json", "--dev", "{F}/noqas.json"], None, B,
     ["--dev", "noqas.json", "lacks 'context' or 'qas'"]),
    ("squad", ["--init", "{F}/init_foreign", "--train", "{F}/answers_str.json", "--dev", "{F}/ok.json"], None, B,
     ["--train", "answers_str.json", "data[0].paragraphs[0].qas[1].answers is a string, not a list"]),
    ("squad", ["--init", "{F}/init_foreign", "--train", "{F}/ok.json", "--dev", "{F}/start_str.json"], None, B,
     ["--dev", "start_str.json", "data[0].paragraphs[0].qas[1].answers[0].answer_start is a string, not a whole number"]),
    ("squad", ["--init", "{F}/init_foreign", "--train", "{F}/qa_list.json", "--dev", "{F}/ok.json"], None, B,
     ["qa_list.json", "data[0].paragraphs[0].qas[1] is a list, not an object"]),
    ("squad", ["--init", "{F}/init_foreign", "--train", "{F}/question_num.json", "--dev", "{F}/ok.json"], None, B,
     ["question_num.json", "data[0].paragraphs[0].qas[1].question is a whole number, not a string"]),
    ("squad", ["--init", "{F}/init_foreign", "--train", "{F}/paragraphs_obj.json", "--dev", "{F}/ok.json"], None, B,
     ["paragraphs_obj.json", "data[0].paragraphs is an object, not a list"]),
    ("squad", ["--init", "{F}/init_foreign", "--train", "{F}/context_list.json", "--dev", "{F}/ok.json"], None, B,
     ["context_list.json", "data[0].paragraphs[0].context is a list, not a string"]),
    ("squad", ["--init", "{F}/init_foreign", "--train", "{F}/empty", "--dev", "{F}/ok.json"], None, B,
     ["--train", "empty", "not valid JSON"]),
    ("squad", ["--init", "{F}/init_foreign", "--train", "{T}/none.json", "--dev", "{F}/ok.json"], None, B,
     ["--train", "does not exist"]),
    ("squad", ["--init", "{F}/init_random", "--train", "{F}/ok.json", "--dev", "{F}/ok.json"], None, B,
     ["ckpt.rank0.params", "not an MXNet parameter file"]),
    ("squad", ["--init", "{F}/init_foreign", "--train", "{F}/ok.json", "--dev", "{F}/ok.json", "--epochs", "0"],
     None, B, ["--epochs", ">= 1"]),
    # ---- graph scripts -----------------------------------------------------------------------------------------
    ("node", ["--dataset", "cora"], None, B, ["--dataset", "cora", "use one of"]),
    ("node", ["--dataset", "linqs"], None, B, ["linqs", "--data-dir"]),
    ("node", ["--dataset", "linqs", "--data-dir", "{T}/nodata"], None, B, ["--data-dir", "does not exist"]),
    ("node", ["--model", "gin"], None, B, ["--model", "gin"]),
    ("node", ["--hidden", "0"], None, B, ["--hidden", ">= 1"]),
    ("node", ["--dropout", "1"], None, B, ["--dropout", "< 1"]),
    ("node", ["--fanouts", "10", "0"], None, B, ["--fanouts", "-1"]),
    ("node", ["--resume", "maybe"], None, B, ["--resume", "maybe"]),
    ("node", ["--resume", "{F}/run_nokeys", "--out", "{T}/o"], None, B, ["state.json", "lacks", "history"]),
    ("node", ["--resume", "{F}/run_trunc", "--out", "{T}/o"], None, B, ["last.rank0.params", "truncated"]),
    ("node", ["--out", "{F}/a_file/x"], None, B, ["--out", "cannot be created"]),
    ("node", ["--dataset", "linqs", "--data-dir", "{F}/linqs_dangling", "--out", "{T}/o"], None, B,
     ["linqs_dangling/cora.cites:3", "paper p9 is not in", "cora.content", "--drop-dangling-cites"]),
    ("node", ["--dataset", "linqs", "--data-dir", "{F}/linqs_dup", "--out", "{T}/o"], None, B,
     ["linqs_dup/cora.content:4", "paper id p2 appears twice (first on line 2)", "remove one"]),
    ("node", ["--dataset", "linqs", "--data-dir", "{F}/linqs_small", "--out", "{T}/o"], None, B,
     ["linqs_small", "all 3 papers go to training", "more than 20 papers per class"]),
    ("node", ["--sampled", "--fanouts", "10", "--out", "{T}/o"], None, B,
     ["--fanouts gives 1 value(s)", "2 layers", "--fanouts 10 10"]),
    ("node", ["--sampled", "--fanouts", "5", "5", "5", "--model", "sage", "--out", "{T}/o"], None, B,
     ["--fanouts gives 3 value(s)", "sage", "2 layers"]),
    ("graph", ["--dataset", "tu", "--data-dir", "{F}/tu_gap", "--name", "T", "--out", "{T}/o"], None, B,
     ["T_graph_indicator.txt", "no node of graph 2"]),
    ("graph", ["--dataset", "tu", "--data-dir", "{F}/tu_cross", "--name", "T", "--out", "{T}/o"], None, B,
     ["T_A.txt:2", "edge 2, 3 joins graph 1 to graph 2"]),
    ("graph", ["--dataset", "tu", "--data-dir", "{F}/tu_order", "--name", "T", "--out", "{T}/o"], None, B,
     ["T_graph_indicator.txt:3", "graph id 1 after 2"]),
    ("graph", ["--dataset", "tu", "--data-dir", "{F}/tu_labels", "--name", "T", "--out", "{T}/o"], None, B,
     ["T_graph_indicator.txt names 2 graphs", "T_graph_labels.txt has 1 labels", "give one label line"]),
    ("graph", ["--batch-size", "200", "--out", "{T}/o"], None, B, ["--batch-size 200", "120 training graphs"]),
    ("graph", ["--dataset", "tu"], None, B, ["tu", "--data-dir"]),
    ("graph", ["--epochs", "-2"], None, B, ["--epochs", ">= 1"]),
    ("graph", ["--batch-size", "1.5"], None, B, ["--batch-size", "'1.5'"]),
    ("graph", ["--compressor", "gzip"], None, B, ["--compressor", "gzip", "registered: "]),
    ("graph", ["--resume", "{F}/run_badjson", "--out", "{T}/o"], None, B, ["state.json", "not valid JSON"]),
    ("graph", ["--out", "{F}/a_file"], None, B, ["--out", "is a file"]),
]


def _id(case):
    entry, args, env, _, _ = case
    text = " ".join(a.replace("{F}/", "").replace("{T}/", "") for a in args)[:60]
    return f"{entry}:{text}" + (f":{','.join(env)}" if env else "")


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_bad_input_is_one_line_with_the_fix(run, files, tmp_path, case):
    entry, args, env, code, words = case
    before = set(os.listdir(files))
    rc, out, err = run(entry, *args, env=env)
    check_one_line(rc, out, err, code, [w.replace("{F}", str(files)) for w in words])
    # refused before starting: no output folder made, nothing half-written, the inputs untouched
    assert not os.path.exists(tmp_path / "o") and not os.path.exists(tmp_path / "s")
    assert leftovers(tmp_path) == [] and leftovers(files) == []
    assert set(os.listdir(files)) == before


def test_enough_cases():
    assert len(CASES) >= 100


# ---- the same, end to end in real processes ----------------------------------------------------------------
def _env(**extra):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", GLUON_SUITE_QUIET="1")
    env.update(extra)
    return env


def _proc(args, env=None, preexec_fn=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env or _env(),
                          cwd=REPO, timeout=120, preexec_fn=preexec_fn)


@pytest.mark.parametrize("args, env, words", [
    (["-m", "gluon_suite.cli", "whatif", "--forward-ms", "1", "--backward-ms", "1", "--param-mb", "1",
      "--latency-us", "0"], {}, ["--latency-us"]),
    (["scripts/cv/train_classification.py", "--resume", "maybe"], {}, ["--resume", "maybe"]),
    (["scripts/graph/train_node_classification.py", "--epochs", "1"], {"OMP_NUM_THREADS": "abc"},
     ["OMP_NUM_THREADS"]),
    (["-m", "gluon_suite.cli", "zoo", "list"], {"GLUON_SUITE_OFFLINE": "maybe"}, ["GLUON_SUITE_OFFLINE"]),
], ids=["whatif-latency", "cls-resume", "omp-env", "offline-env"])
def test_subprocess_one_line(args, env, words):
    p = _proc(args, _env(**env))
    check_one_line(p.returncode, p.stdout, p.stderr, 2, words)


def test_subprocess_foreign_resume_checkpoint(files, tmp_path):
    p = _proc(["scripts/graph/train_graph_classification.py", "--resume", str(files / "run_trunc"),
               "--out", str(tmp_path / "o")])
    check_one_line(p.returncode, p.stdout, p.stderr, 2, ["last.rank0.params", "truncated"])
    assert not (tmp_path / "o").exists()


def _limit_file_size(limit):
    def set_limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit raises EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return set_limit


def test_full_disk_while_publishing_leaves_nothing_half_written(files, tmp_path):
    store = tmp_path / "store"
    card = tmp_path / "card.json"
    card.write_text((files / "card.json").read_text())
    size = (files / "digits_cnn.params").stat().st_size
    p = _proc(["-m", "gluon_suite.cli", "zoo", "publish", str(files / "digits_cnn.params"), "--name", "digits_cnn",
               "--card", str(card), "--store", str(store)], _env(GLUON_SUITE_HOME=str(tmp_path / "home")),
              preexec_fn=_limit_file_size(size // 2))
    line = check_one_line(p.returncode, p.stdout, p.stderr, 1, ["no space left", "output folder"])
    assert "store" in line
    assert leftovers(tmp_path) == []
    assert not list(store.glob("*.params")) and not (store / "index.json").exists()
    assert json.loads(card.read_text()) == json.loads((files / "card.json").read_text())


def test_full_disk_while_writing_whatif_json(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    p = _proc(["-m", "gluon_suite.cli", "whatif", "--forward-ms", "30", "--backward-ms", "60", "--param-mb", "100",
               "--json", str(out / "pred.json")], preexec_fn=_limit_file_size(64))
    check_one_line(p.returncode, p.stdout, p.stderr, 1, ["no space left", "pred.json"])
    assert os.listdir(out) == []


# ---- a full disk in the middle of a training run: one line, exit 1, the last checkpoint kept ----------------
def _snapshot(folder):
    """``{name: bytes}`` of every file in ``folder``."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _full_disk_then_resume(tmp_path, script, first, args, limit, committed, first_written=None):
    """Train ``first`` (a run that commits a checkpoint), then continue it with ``args`` under a
    file-size limit of ``limit`` bytes (below the checkpoint's size): the continuation must stop at
    its first checkpoint with one line naming the file it was writing (``first_written``, by default
    ``committed``) and exit 1, leaving every
    file of the committed checkpoint as it was and nothing new; then ``--resume auto`` without the
    limit finishes the run. Returns the final run's output and the run folder."""
    out = tmp_path / "run"
    p = _proc([script, *first, "--out", str(out)])
    assert p.returncode == 0, p.stderr
    before = _snapshot(out)
    assert len(before[committed]) > limit   # the next checkpoint cannot fit
    p = _proc([script, *args, "--out", str(out), "--resume", "auto"], preexec_fn=_limit_file_size(limit))
    line = check_one_line(p.returncode, p.stdout, p.stderr, 1,
                          ["no space left", str(out / (first_written or committed)), "File too large", "ulimit -f",
                           "--resume auto"])
    assert "earlier checkpoints are intact" in line
    after = _snapshot(out)
    assert set(after) == set(before) and leftovers(tmp_path) == []
    for name in ("state.json", committed):   # the committed checkpoint, byte for byte
        assert after[name] == before[name], name
    p = _proc([script, *args, "--out", str(out), "--resume", "auto"])
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    return p, out


def test_full_disk_during_a_graph_run_keeps_the_last_checkpoint_and_resumes(tmp_path):
    script = "scripts/graph/train_node_classification.py"
    run = ["--dataset", "karate", "--epochs", "20"]
    p, out = _full_disk_then_resume(tmp_path, script, [*run, "--stop-after-epochs", "10"], run, 1024,
                                    "last.rank0.params")
    assert "resumed from" in p.stdout + p.stderr
    state = json.loads((out / "state.json").read_text())
    assert state["epoch"] == 20 and [h["epoch"] for h in state["history"]] == [10, 20]
    assert [json.loads(l)["epoch"] for l in (out / "log.jsonl").read_text().splitlines()] == [10, 20]


def test_full_disk_during_pretraining_keeps_the_last_checkpoint_and_resumes(tmp_path):
    script, phase = "scripts/nlp/pretrain_bert.py", "seq_len=32,batch_size=8,steps=2,lr=0.001"
    first = ["--phase", phase, "--no-progress"]
    p, out = _full_disk_then_resume(tmp_path, script, first, [*first, "--phase", phase], 1_000_000,
                                    "ckpt.rank0.params")
    assert "resumed from" in p.stdout + p.stderr and "phase 2 done" in p.stdout + p.stderr
    state = json.loads((out / "state.json").read_text())
    assert state["phase"] == 2 and [(h["phase"], h["step"]) for h in state["history"]] == [(1, 1), (1, 2), (2, 1), (2, 2)]


def test_full_disk_during_a_vision_run_keeps_the_last_checkpoint_and_resumes(tmp_path):
    script = "scripts/cv/train_classification.py"
    run = ["--model", "digits_cnn", "--image-size", "16", "--epochs", "2", "--batch-size", "128", "--no-progress"]
    # the second epoch is better than the first, so its best model is the first file written
    p, out = _full_disk_then_resume(tmp_path, script, [*run, "--stop-after-epochs", "1"], run, 100_000,
                                    "last.rank0.params", first_written="best.params")
    state = json.loads((out / "state.json").read_text())
    assert state["epoch"] == 2 and state["history"][1]["test_acc"] > state["history"][0]["test_acc"] and [h["epoch"] for h in state["history"]] == [1, 2]
    assert len((out / "summary.csv").read_text().splitlines()) == 3   # header and one row per epoch


@pytest.mark.parametrize("script, args", [
    ("scripts/graph/train_graph_classification.py", ["--epochs", "2"]),
    ("scripts/nlp/pretrain_bert.py", ["--phase", "seq_len=32,batch_size=8,steps=1,lr=0.001", "--no-progress"]),
    ("scripts/cv/train_classification.py", ["--model", "digits_cnn", "--epochs", "1", "--batch-size", "256",
                                            "--no-progress"]),
], ids=["graph", "bert", "vision"])
def test_full_disk_before_the_first_checkpoint_leaves_no_run_folder(tmp_path, script, args):
    out = tmp_path / "run"
    p = _proc([script, *args, "--out", str(out)], preexec_fn=_limit_file_size(4096))
    check_one_line(p.returncode, p.stdout, p.stderr, 1, ["no space left", str(out), "File too large"])
    assert not out.exists() and leftovers(tmp_path) == []


def test_valid_citation_files_train_without_warnings(tmp_path):
    """Valid LINQS files (every cited paper present) train to the end with no NumPy/MXNet warning."""
    rs = __import__("numpy").random.RandomState(0)
    papers = [f"p{i}" for i in range(90)]
    with open(tmp_path / "cora.content", "w") as f:
        for i, p in enumerate(papers):
            f.write(p + " " + " ".join(str(int(v)) for v in rs.uniform(size=8) < 0.3) + f" C{i % 3}\n")
    with open(tmp_path / "cora.cites", "w") as f:
        for i in range(90):
            f.write(f"{papers[i]} {papers[(i + 3) % 90]}\n")
    p = _proc(["scripts/graph/train_node_classification.py", "--dataset", "linqs", "--data-dir", str(tmp_path),
               "--epochs", "10", "--out", str(tmp_path / "run")])
    assert p.returncode == 0, p.stderr
    assert "Warning" not in p.stderr and "invalid value" not in p.stderr, p.stderr
    assert "test accuracy" in p.stdout


@pytest.mark.parametrize("code, where, words", [
    (30, "os.replace", ["could not write", "config.json", "read-only", "writable disk"]),   # EROFS
    (13, "tempfile.mkstemp", ["could not write", "config.json", "permission denied", "permissions"]),   # EACCES
], ids=["erofs", "eacces"])
def test_unwritable_output_is_one_line_exit_1(tmp_path, capfd, monkeypatch, code, where, words):
    """A read-only disk or a folder without write permission (cannot be arranged for root in a test:
    the system call is made to fail) is reported like a full disk: the file, the cause, the fix."""
    import errno as errno_module
    from gluon_suite.utils import fileio, write_json
    assert code == {"os.replace": errno_module.EROFS, "tempfile.mkstemp": errno_module.EACCES}[where]
    module, name = where.split(".")

    def fail(*a, **k):
        raise OSError(code, os.strerror(code), str(a[0]) if a else None)
    monkeypatch.setattr(getattr(fileio, module), name, fail)
    (tmp_path / "config.json").write_text("{}\n")
    with pytest.raises(SystemExit) as ei:
        run_cli(lambda argv: write_json(tmp_path / "config.json", {"a": 1}), [])
    out, err = capfd.readouterr()
    check_one_line(ei.value.code, out, err, 1, words)
    assert os.listdir(tmp_path) == ["config.json"] and (tmp_path / "config.json").read_text() == "{}\n"
