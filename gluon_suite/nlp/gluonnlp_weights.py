"""A GluonNLP user's own BERT files as a fine-tuning backbone: ``--bert_model bert_12_768_12
--bert_dataset book_corpus_wiki_en_uncased --pretrained-dir DIR``.

GluonNLP 0.10 keeps a pretrained BERT as two files in one folder (its ``root``: by default
``$MXNET_HOME/models``, else ``~/.mxnet/models``):

- the parameters, ``{model}_{dataset}-{sha1[:8]}.params``: MXNet's ``save_parameters`` file of a
  ``BERTModel`` (encoder, pooler, and for most datasets the masked-LM decoder and next-sentence
  classifier);
- the vocabulary, ``{dataset}-{sha1[:8]}.vocab``: a ``BERTVocab`` as JSON (``BERTVocab.to_json``).

Each file's SHA-1 is checked against the one GluonNLP publishes for its name, read from the
installed GluonNLP at run time: ``mxnet.gluon.model_zoo.model_store._model_sha1`` (the rows
``gluonnlp.model.bert`` adds to it) and ``gluonnlp.data.utils._vocab_sha1``. Nothing is
downloaded. The network is built by GluonNLP's own constructor (``gluonnlp.model.bert``'s
``bert_12_768_12`` or ``bert_24_1024_16`` with ``pretrained=False``) without the pretraining
heads, and the parameters are loaded into it; the vocabulary is read by GluonNLP's reader
(``BERTVocab.from_json``: JSON, no pickle). As GluonNLP's fine-tuning scripts do, the tokenizer
lower-cases the text for a dataset whose name says ``uncased``.

Every refusal is one ``UserError`` line that names the file or the names known: an unknown model
or dataset, a missing file, a hash that differs from GluonNLP's, a file that does not fit the
network.
"""
import os

from ..utils.env import env
from ..utils.errors import UserError
from ..utils.readers import data_reader

MODELS = ("bert_12_768_12", "bert_24_1024_16")   # GluonNLP's BERT constructors this module builds with
DEFAULT_MODEL, DEFAULT_DATASET = "bert_12_768_12", "book_corpus_wiki_en_uncased"   # GluonNLP's script defaults


def params_table():
    """GluonNLP's ``{model_dataset: sha1}`` of its parameter files (MXNet's model store table, which
    importing ``gluonnlp.model.bert`` extends with the BERT rows)."""
    import gluonnlp.model.bert  # noqa: F401  (adds GluonNLP's BERT rows to the table)
    from mxnet.gluon.model_zoo import model_store
    return model_store._model_sha1


def vocab_table():
    """GluonNLP's ``{dataset: [sha1, file extension, special tokens]}`` of its vocabulary files."""
    from gluonnlp.data.utils import _vocab_sha1
    return _vocab_sha1


def datasets_of(model):
    """The datasets GluonNLP publishes ``model``'s parameters for with a WordPiece vocabulary
    (``.vocab``; the SentencePiece ones are left out), sorted."""
    vocabs, prefix = vocab_table(), model + "_"
    return sorted(k[len(prefix):] for k in params_table()
                  if k.startswith(prefix) and (vocabs.get(k[len(prefix):]) or [None, None])[1] == ".vocab")


def check_names(model, dataset):
    """A UserError listing the known names when ``model`` or ``dataset`` is not one of GluonNLP's."""
    if model not in MODELS:
        raise UserError(f"--bert_model {model!r} is not a GluonNLP BERT loaded here; choose one of {', '.join(MODELS)}")
    known = datasets_of(model)
    if dataset not in known:
        raise UserError(f"--bert_dataset {dataset!r}: GluonNLP publishes no {model} weights for it; choose one of "
                        f"{', '.join(known)}")


def default_dir():
    """GluonNLP's folder of downloaded models: ``$MXNET_HOME/models``, else ``~/.mxnet/models``."""
    return os.path.join(os.path.expanduser(env("MXNET_HOME") or os.path.join("~", ".mxnet")), "models")


def file_names(model, dataset):
    """``[(file name, sha1)]`` of the parameter and vocabulary files, as GluonNLP names them."""
    check_names(model, dataset)
    p_sha = params_table()[f"{model}_{dataset}"]
    v_sha, ext = vocab_table()[dataset][:2]
    return [(f"{model}_{dataset}-{p_sha[:8]}.params", p_sha), (f"{dataset}-{v_sha[:8]}{ext}", v_sha)]


def find_files(model, dataset, folder=None):
    """``[(path, sha1)]`` of the parameter and vocabulary files in ``folder`` (default
    ``default_dir()``); a UserError names the first one missing."""
    folder = os.path.expanduser(folder) if folder else default_dir()
    out = []
    for name, sha in file_names(model, dataset):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise UserError(f"{path} does not exist: GluonNLP names {model} on {dataset} {name}; copy it there from "
                            "a GluonNLP cache (~/.mxnet/models) or give --pretrained-dir the folder that holds it")
        out.append((path, sha))
    return out


def verify(path, sha1):
    """A UserError naming ``path`` unless its SHA-1 is ``sha1`` (GluonNLP's for its name)."""
    from ..model_zoo.finetune import sha1_of
    got = sha1_of(path)
    if got != sha1:
        raise UserError(f"{path} has sha1 {got[:12]}..., GluonNLP publishes {sha1[:12]}... for this name: the file is "
                        "damaged or not GluonNLP's release; copy GluonNLP's file again")


@data_reader("GluonNLP BERT vocabulary JSON", checks=("utf-8 JSON that BERTVocab reads",),
             path="path", fix="copy GluonNLP's file again")
def read_vocab(path):
    """GluonNLP's ``BERTVocab`` from its JSON file ``path``."""
    from gluonnlp.vocab import BERTVocab
    try:
        with open(path, encoding="utf-8") as f:
            return BERTVocab.from_json(f.read())
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path} is not a GluonNLP BERT vocabulary (BERTVocab JSON): {str(exc).splitlines()[0]}") \
            from None


def load_gluonnlp_bert(model, dataset, folder=None, max_length=None, dropout=0.1, use_pooler=True):
    """``(net, vocab, info)``: GluonNLP's ``model`` (its constructor, ``pretrained=False``, no
    pretraining heads, ``use_pooler`` as asked) with the parameters of ``dataset`` from
    ``folder`` (GluonNLP's file names, SHA-1 checked), on the current context; ``info`` holds
    ``model`` (``{model}_{dataset}``), ``max_length`` (its positions) and ``lower`` (whether the
    tokenizer lower-cases: an ``uncased`` dataset). ``max_length``: the longest input asked for."""
    import mxnet as mx
    from gluonnlp.model import bert
    (params, p_sha), (vocab_path, v_sha) = find_files(model, dataset, folder)
    verify(vocab_path, v_sha)
    verify(params, p_sha)
    vocab = read_vocab(vocab_path)
    net, _ = getattr(bert, model)(dataset_name=None, vocab=vocab, pretrained=False, use_pooler=use_pooler,
                                  use_decoder=False, use_classifier=False, dropout=dropout)
    limit = net.encoder._max_length
    if max_length and max_length > limit:
        raise UserError(f"--max-len {max_length} exceeds the {limit} positions of GluonNLP's {model}")
    try:   # the decoder and classifier in the file are left out, as GluonNLP's own loader does
        net.load_parameters(params, ctx=mx.current_context(), ignore_extra=True, cast_dtype=True,
                            dtype_source="current")
    except (AssertionError, ValueError, mx.base.MXNetError) as exc:
        why = (str(exc).strip().splitlines() or ["?"])[0][:200]
        raise UserError(f"{params} does not fit GluonNLP's {model} with its {len(vocab)}-token vocabulary: {why}") \
            from None
    return net, vocab, {"model": f"{model}_{dataset}", "max_length": limit, "lower": "uncased" in dataset}
