"""GluonNLP 0.10's published BERT command lines (tests/data/gluonnlp_bert_commands.txt) through our
scripts: every flag parses to GluonNLP's meaning (the values below are read off the published
commands by hand), each command with a model small enough here runs one short epoch or step on our
sample data, with GluonNLP-format BERT files (tests/nlp/gluonnlp_files.py) standing in for GluonNLP's
bert_12_768_12 on book_corpus_wiki_en_uncased; those naming BERT-large are parsed and checked up to
the file lookup (the SQuAD 2.0 one also runs an epoch with BERT-base's files in its place). A flag that
has no meaning here is refused in one line, and so are the published commands for what the suite
leaves out (XNLI, RoBERTa)."""
import json
import os
import shlex

import pytest

from gluon_suite.nlp.glue_samples import write_glue_tasks
from gluon_suite.nlp.samples import write_squad
from gluon_suite.nlp.text import embedded_corpus, write_corpus
from gluon_suite.utils import UserError

from ..conftest import REPO, load_script
from .gluonnlp_files import write_gluonnlp_bert

COMMANDS = os.path.join(REPO, "tests", "data", "gluonnlp_bert_commands.txt")

# GluonNLP's meaning of each published command's flags, as our configuration keys hold it
EXPECTED = {
    "pretraining_horovod": {"steps": 1000000, "lr": 1e-4, "total_batch_size": 256, "accumulate": 1, "raw": True,
                            "comm_backend": "horovod"},
    "pretraining_device": {"comm_backend": "device", "gpus": "0,1,2,3,4,5,6,7"},
    "CoLA": {"task_name": "CoLA", "batch_size": 32, "gpus": "0", "lr": 2e-5, "epochs": 10, "optimizer": "bertadam"},
    "SST": {"task_name": "SST", "batch_size": 32, "gpus": "0", "seed": 2, "lr": 2e-5, "warmup_ratio": 0.1,
            "epochs": 5, "log_interval": 400},
    "MRPC": {"task_name": "MRPC", "batch_size": 32, "optimizer": "bertadam", "epochs": 3, "gpus": "0", "lr": 2e-5,
             "bert_model": "bert_12_768_12", "bert_dataset": "book_corpus_wiki_en_uncased"},
    "STS-B": {"task_name": "STS-B", "batch_size": 32, "lr": 2e-5, "epochs": 5, "gpus": "0", "seed": 24,
              "warmup_ratio": 0.1},
    "QQP": {"task_name": "QQP", "batch_size": 32, "lr": 2e-5, "epochs": 5, "warmup_ratio": 0.1, "gpus": "0", "seed": 0},
    "MNLI": {"task_name": "MNLI", "batch_size": 48, "lr": 2e-5, "warmup_ratio": 0.1, "epochs": 4, "seed": 2,
             "log_interval": 500, "gpus": "0"},
    "RTE": {"task_name": "RTE", "batch_size": 32, "lr": 2e-5, "seed": 33, "warmup_ratio": 0.1, "epochs": 5,
            "gpus": "0"},
    "squad1.1_base": {"optimizer": "adam", "batch_size": 12, "lr": 3e-5, "epochs": 2, "gpus": "0"},
    "squad1.1_accumulate": {"optimizer": "adam", "accumulate": 2, "batch_size": 6, "lr": 3e-5, "epochs": 2,
                            "gpus": "0"},
    "squad1.1_large_horovod": {"bert_model": "bert_24_1024_16", "batch_size": 4, "lr": 3e-5, "epochs": 2,
                               "gpus": "0", "dtype": "float16", "comm_backend": "horovod"},
    "squad1.1_large": {"bert_model": "bert_24_1024_16", "optimizer": "adam", "accumulate": 6, "batch_size": 4,
                       "lr": 3e-5, "epochs": 2, "gpus": "0"},
    "squad2.0_large": {"bert_model": "bert_24_1024_16", "optimizer": "adam", "accumulate": 8, "batch_size": 4,
                       "lr": 3e-5, "epochs": 2, "gpus": "0", "null_score_diff_threshold": -2.0, "version_2": True},
}
# the published commands for what the suite leaves out, and the one line each is refused with
REFUSED = {"XNLI": "--task_name 'XNLI' is not a GLUE task",
           # GluonNLP's parser reads --warmup as its prefix --warmup_ratio; flags are never abbreviated here
           "roberta_SST": "unrecognized arguments: --warmup 0.06; did you mean '--warmup_ratio'",
           "roberta_MNLI": "unrecognized arguments: --warmup 0.06; did you mean '--warmup_ratio'"}
# the GLUE metrics each task's log holds (glue.TASKS)
METRICS = {"CoLA": {"dev_mcc"}, "SST": {"dev_accuracy"}, "MRPC": {"dev_accuracy", "dev_f1"},
           "STS-B": {"dev_pearson", "dev_spearman"}, "QQP": {"dev_accuracy", "dev_f1"},
           "MNLI": {"dev_matched_accuracy", "dev_mismatched_accuracy"}, "RTE": {"dev_accuracy"}}


def read_commands():
    """``{name: (script, published flags, our flags)}`` of the data file."""
    out, name = {}, None
    with open(COMMANDS, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                name, script = line[1:].split("] ")
                out[name] = [script, [], []]
            elif line.startswith("published:"):
                out[name][1] = shlex.split(line[len("published:"):])
            elif line.startswith("ours:"):
                out[name][2] = shlex.split(line[len("ours:"):])
    return {k: tuple(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("gluonnlp_data")
    docs = embedded_corpus()
    for sub, part in (("folder1", docs[:25]), ("folder2", docs[25:50]), ("dev_folder", docs[50:56])):
        os.makedirs(root / "text" / sub)
        write_corpus(part, root / "text" / sub / "part.txt")
    write_glue_tasks(str(root / "glue"))
    write_squad(str(root / "squad"), train=8, dev=4)
    os.makedirs(root / "gluonnlp")
    return {"{TEXT}": str(root / "text"), "{GLUE}": str(root / "glue"), "{SQUAD}": str(root / "squad"),
            "{GLUONNLP}": str(root / "gluonnlp")}


def argv_of(name, data):
    _, published, ours = read_commands()[name]
    subst = []
    for arg in published + ours:
        for key, value in data.items():
            arg = arg.replace(key, value)
        subst.append(arg)
    return subst


def config_of(name, data):
    from gluon_suite.nlp.finetune import ClassifierConfig, SquadConfig
    script = read_commands()[name][0]
    parser = load_script(f"scripts/nlp/{script}.py").build_parser()
    args = vars(parser.parse_args(argv_of(name, data)))
    if script == "pretrain_bert":   # the one-phase flags are folded into the phases later (fold_phase_flags)
        return args
    return (ClassifierConfig if script == "finetune_classification" else SquadConfig).from_sources(args, parser)


def test_every_published_command_is_in_the_data_file():
    assert set(read_commands()) == set(EXPECTED) | set(REFUSED)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_a_published_command_parses_with_gluonnlps_meaning(data, name):
    cfg = config_of(name, data)
    assert {k: cfg[k] for k in EXPECTED[name]} == EXPECTED[name]


def _cpu(argv):
    """The argv with GluonNLP's GPU choice (``--gpu 0``, a bare ``--gpu``) replaced by the CPU here."""
    out = []
    for i, arg in enumerate(argv):
        if arg == "--gpu":
            out += ["--gpu", "-1"]
        elif not (i and argv[i - 1] == "--gpu" and arg.lstrip("-").isdigit()):
            out.append(arg)
    return out


GLUE_RUNS = ["CoLA", "STS-B", "MRPC"] + [pytest.param(n, marks=pytest.mark.long) for n in ("SST", "QQP", "MNLI", "RTE")]


@pytest.mark.parametrize("name", GLUE_RUNS)
def test_a_published_glue_command_trains_an_epoch_from_gluonnlp_files(data, tmp_path, monkeypatch, name):
    write_gluonnlp_bert(data["{GLUONNLP}"], monkeypatch)
    out = tmp_path / "run"
    argv = _cpu(argv_of(name, data)) + ["--epochs", "1", "--max_len", "32", "--out", str(out)]
    assert load_script("scripts/nlp/finetune_classification.py").main(argv) == 0
    rec = json.loads((out / "log.jsonl").read_text().splitlines()[-1])
    assert METRICS[name] <= set(rec) and rec["epoch"] == 1
    saved = json.loads((out / "config.json").read_text())
    assert (saved["bert_model"], saved["bert_dataset"]) == \
        (EXPECTED[name].get("bert_model"), EXPECTED[name].get("bert_dataset"))   # GluonNLP's defaults unless given


@pytest.mark.parametrize("name", ["squad1.1_base", "squad1.1_accumulate"])
def test_a_published_squad_command_trains_an_epoch_from_gluonnlp_files(data, tmp_path, monkeypatch, name):
    write_gluonnlp_bert(data["{GLUONNLP}"], monkeypatch)
    out = tmp_path / "run"
    argv = _cpu(argv_of(name, data)) + ["--epochs", "1", "--max_seq_length", "48", "--max_query_length", "8",
                                        "--doc_stride", "16", "--out", str(out)]
    assert load_script("scripts/nlp/finetune_squad.py").main(argv) == 0
    rec = json.loads((out / "log.jsonl").read_text().splitlines()[-1])
    assert {"dev_exact_match", "dev_f1"} <= set(rec)


@pytest.mark.parametrize("name", ["squad1.1_large_horovod", "squad1.1_large", "squad2.0_large"])
def test_a_bert_large_command_looks_for_gluonnlps_file(data, tmp_path, name):
    argv = _cpu(argv_of(name, data)) + ["--out", str(tmp_path / "run")]
    argv = [a if a != "float16" else "float32" for a in argv]   # float16 needs a GPU here
    with pytest.raises(UserError) as err:
        load_script("scripts/nlp/finetune_squad.py").main(argv)
    text = str(err.value)
    assert "\n" not in text and "does not exist" in text
    # GluonNLP's name of BERT-large uncased's parameters: the first 8 hex digits of its published SHA-1
    assert os.path.join(data["{GLUONNLP}"], "bert_24_1024_16_book_corpus_wiki_en_uncased-24551e14.params") in text
    assert not (tmp_path / "run").exists()


def test_the_published_squad2_command_trains_an_epoch_on_bert_base_files(data, tmp_path, monkeypatch):
    """The SQuAD 2.0 command with BERT-base's GluonNLP files in BERT-large's place: --version_2 reads the
    unanswerable questions, and the run reports SQuAD 2.0's metrics and writes null_odds.json."""
    write_gluonnlp_bert(data["{GLUONNLP}"], monkeypatch)
    out = tmp_path / "run"
    argv = [a if a != "bert_24_1024_16" else "bert_12_768_12" for a in _cpu(argv_of("squad2.0_large", data))]
    argv += ["--epochs", "1", "--accumulate", "1", "--max_seq_length", "48", "--max_query_length", "8",
             "--doc_stride", "16", "--out", str(out)]
    assert load_script("scripts/nlp/finetune_squad.py").main(argv) == 0
    rec = json.loads((out / "log.jsonl").read_text().splitlines()[-1])
    assert {"dev_exact_match", "dev_f1", "dev_HasAns_exact", "dev_NoAns_exact", "dev_best_f1_thresh"} <= set(rec)
    assert rec["dev_HasAns_total"] == 12 and rec["dev_NoAns_total"] == 8   # 4 dev paragraphs: 3 + 2 questions each
    saved = json.loads((out / "config.json").read_text())
    assert saved["version_2"] is True and saved["null_score_diff_threshold"] == -2.0
    odds = json.loads((out / "null_odds.json").read_text())
    assert len(odds) == 20


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_published_command_for_what_is_left_out_is_one_line(data, tmp_path, capsys, name):
    argv = _cpu(argv_of(name, data)) + ["--out", str(tmp_path / "run")]
    try:
        load_script("scripts/nlp/finetune_classification.py").main(argv)
        raise AssertionError("no error")
    except UserError as exc:
        text = str(exc)
    except SystemExit:   # argparse's usage error: its one line is on stderr
        text = capsys.readouterr().err.strip().splitlines()[-1]
    assert REFUSED[name] in text and "\n" not in text, text
    assert not (tmp_path / "run").exists()


def test_the_published_pretraining_command_runs_a_step(data, tmp_path, capsys):
    out = tmp_path / "run"
    argv = argv_of("pretraining_horovod", data) + ["--num_steps", "1", "--out", str(out), "--no-progress"]
    assert load_script("scripts/nlp/pretrain_bert.py").main(argv) == 0
    printed = capsys.readouterr().out
    # 256 = 256 per worker x 1 worker x 1 accumulation; --data_eval's text evaluated at the phase's end
    assert "global batch 256 = 256 per worker x 1 workers x 1 accumulation" in printed
    rec = json.loads((out / "log.jsonl").read_text().splitlines()[-1])
    assert rec["step"] == 1 and rec["global_batch"] == 256 and rec["eval_instances"] > 0
    saved = json.loads((out / "config.json").read_text())
    assert saved["data"].startswith(data["{TEXT}"]) and saved["raw"] is True


@pytest.mark.parametrize("script,flags,message", [
    ("pretrain_bert", ["--comm_backend", "dist_sync_device"], "dist_sync_device does not apply here"),
    ("finetune_squad", ["--comm_backend", "dist_sync_device"], "dist_sync_device does not apply here"),
    ("pretrain_bert", ["--data", "{TEXT}/folder1/*.txt"], "--data without --raw names GluonNLP's pre-processed .npz"),
    ("pretrain_bert", ["--data_eval", "{TEXT}/dev_folder/*.txt"], "--data_eval without --raw"),
    ("pretrain_bert", ["--raw", "--data", "{TEXT}/nothing/*.txt,"], "matches no file"),
    ("finetune_classification", ["--task_name", "SST", "--data_dir", "{GLUE}", "--epsilon", "1e-6", "--optimizer",
                                 "sgd", "--pretrained-dir", "{GLUONNLP}"], "--epsilon does not apply to --optimizer sgd"),
    ("finetune_classification", ["--task_name", "SST", "--data_dir", "{GLUE}", "--bert_model", "bert_12_768_12",
                                 "--init", "{GLUE}"], "drop --init"),
    ("finetune_classification", ["--task_name", "RTE", "--data_dir", "{GLUE}", "--bert_dataset", "wiki_cn",
                                 "--pretrained-dir", "{GLUONNLP}"], "GluonNLP publishes no bert_12_768_12 weights for it; choose one of"),
])
def test_what_does_not_apply_is_one_line(data, tmp_path, capsys, script, flags, message):
    argv = [data.get(f, f).replace("{TEXT}", data["{TEXT}"]) for f in flags] + ["--out", str(tmp_path / "run")]
    if script == "finetune_squad":
        argv += ["--train", f"{data['{SQUAD}']}/train-v1.1.json", "--dev", f"{data['{SQUAD}']}/dev-v1.1.json"]
    mod = load_script(f"scripts/nlp/{script}.py")
    try:
        mod.main(argv)
        raise AssertionError("no error")
    except UserError as exc:
        text = str(exc)
    except SystemExit:   # argparse's usage error: its one line is on stderr
        text = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in text and "\n" not in text, text
    assert not (tmp_path / "run").exists()
