"""SQuAD data for extractive QA: reading SQuAD v1.1 and v2.0 JSON files and turning questions into
BERT inputs over windows of long contexts (GluonNLP's ``SQuADTransform``).

SQuAD 2.0 adds unanswerable questions: ``is_impossible: true`` with an empty ``answers`` list
(the file may keep ``plausible_answers`` beside it, which is not an answer and is ignored). A
question without an answer has the null answer, the ``[CLS]`` position, as its target in every
window, as any window that does not hold an answer does. Prediction and the metrics are in
``squad_eval``."""
import collections
import json

import numpy as np

from ..utils.errors import UserError
from ..utils.readers import data_reader

_JSON_TYPES = {dict: "an object", list: "a list", str: "a string", int: "a whole number", bool: "true/false"}
_LAYOUT = ("SQuAD: data[].paragraphs[].{context, qas[].{id, question, answers[].{text, answer_start}, "
           "is_impossible (2.0)}}")


def _json_kind(value):
    if isinstance(value, bool):
        return "true/false"
    if value is None:
        return "null"
    for t, name in ((dict, "an object"), (list, "a list"), (str, "a string"), (int, "a whole number"),
                    (float, "a number")):
        if isinstance(value, t):
            return name
    return type(value).__name__


def _field(obj, key, kind, path, where):
    """``obj[key]`` checked to be of JSON type ``kind`` (dict, list, str, int or bool); a UserError
    naming the file and the JSON path (``data[0].paragraphs[2].qas[1].answers``) otherwise."""
    fix = f"fix the file ({_LAYOUT})"
    if key not in obj:
        raise UserError(f"{path}: {where} lacks '{key}' ({_JSON_TYPES[kind]}); {fix}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise UserError(f"{path}: {where}.{key} is {_json_kind(value)}, not {_JSON_TYPES[kind]}; {fix}")
    return value


def _load(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise UserError(f"{path} does not exist") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise UserError(f"{path}: a SQuAD file is an object with a 'data' list")
    return data["data"]


def _answers(qa, context, path, qwhere):
    """The checked ``(texts, starts)`` of question ``qa`` and whether it is unanswerable."""
    texts, starts = [], []
    for ni, ans in enumerate(_field(qa, "answers", list, path, qwhere)):
        awhere = f"{qwhere}.answers[{ni}]"
        if not isinstance(ans, dict):
            raise UserError(f"{path}: {awhere} is {_json_kind(ans)}, not an object with 'text' and "
                            "'answer_start'; fix the file")
        text = _field(ans, "text", str, path, awhere)
        s = _field(ans, "answer_start", int, path, awhere)
        if s < 0 or context[s:s + len(text)] != text:
            raise UserError(f"{path}: {qwhere}: answer {text!r} is not at character {s} of the "
                            f"context ({awhere}); fix answer_start")
        texts.append(text)
        starts.append(s)
    impossible = _field(qa, "is_impossible", bool, path, qwhere) if "is_impossible" in qa else False
    if impossible and texts:
        raise UserError(f"{path}: {qwhere} is unanswerable (is_impossible: true) but has {len(texts)} "
                        "answer(s); SQuAD 2.0 keeps an unanswerable question's answers empty (its "
                        "plausible_answers apart): fix the file")
    return texts, starts, impossible


@data_reader("SQuAD JSON file", path="path",
             checks=("utf-8 JSON with a 'data' list", "every field of its JSON type", "answers at their offsets",
                     "unanswerable questions without answers", "question ids unique"))
def read_squad(path, allow_impossible=True):
    """Read a SQuAD v1.1 or v2.0 JSON file: a list of dicts with id, question, context, answers
    (texts), answer_start (chars) and is_impossible (SQuAD 2.0's flag; False where absent). A
    question with no answers is unanswerable: its gold answer is the empty one. Every field is
    checked for its JSON type where it is read; a wrong type, a missing field, an answer not found at
    its offset, an ``is_impossible`` question with answers or a question id used twice raises
    UserError naming the file and the JSON path (``data[0].paragraphs[2].qas[1].answers``).
    ``allow_impossible=False`` (a SQuAD v1.1 run) refuses ``is_impossible: true`` questions the same
    way, naming the first."""
    out, seen = [], set()
    for ai, art in enumerate(_load(path)):
        if not isinstance(art, dict):
            raise UserError(f"{path}: data[{ai}] is {_json_kind(art)}, not an object with 'paragraphs'; fix the file")
        for pi, para in enumerate(_field(art, "paragraphs", list, path, f"data[{ai}]")):
            where = f"data[{ai}].paragraphs[{pi}]"
            if not isinstance(para, dict):
                raise UserError(f"{path}: {where} is {_json_kind(para)}, not an object with 'context' and "
                                "'qas'; fix the file")
            if "context" not in para or "qas" not in para:
                raise UserError(f"{path}: {where} lacks 'context' or 'qas'; fix the file")
            context = _field(para, "context", str, path, where)
            for qi, qa in enumerate(_field(para, "qas", list, path, where)):
                qwhere = f"{where}.qas[{qi}]"
                if not isinstance(qa, dict):
                    raise UserError(f"{path}: {qwhere} is {_json_kind(qa)}, not an object; fix the file")
                qid = qa.get("id")
                if isinstance(qid, int) and not isinstance(qid, bool):
                    qid = str(qid)   # numeric ids are common in converted files
                else:
                    qid = _field(qa, "id", str, path, qwhere)
                question = _field(qa, "question", str, path, qwhere)
                texts, starts, impossible = _answers(qa, context, path, qwhere)
                if impossible and not allow_impossible:
                    raise UserError(f"{path}: {qwhere} is unanswerable (is_impossible: true), a SQuAD 2.0 "
                                    "question; add --version_2 to train and evaluate with unanswerable questions")
                if qid in seen:
                    raise UserError(f"{path}: {qwhere}.id {qid!r} is the id of an earlier question; question "
                                    "ids must be unique (predictions are keyed by them)")
                seen.add(qid)
                out.append({"id": qid, "question": question, "context": context, "answers": texts,
                            "answer_start": starts, "is_impossible": impossible})
    if not out:
        raise UserError(f"{path} holds no questions")
    return out


def check_squad_files(train, dev, version_2=False):
    """Read the ``--train`` and ``--dev`` SQuAD files once before any model is built; a malformed
    one fails with one line naming the flag, the file and the entry. Without ``version_2`` a SQuAD
    2.0 question (``is_impossible: true``) is refused with the flag that accepts it."""
    for flag, path in (("--train", train), ("--dev", dev)):
        try:
            read_squad(path, allow_impossible=version_2)
        except UserError as exc:
            raise UserError(f"{flag} {exc}; give a SQuAD v1.1 or v2.0 JSON file ({{\"data\": [{{\"paragraphs\": "
                            "[...]}]}})") from None


def check_squad_lengths(max_len, max_query, doc_stride):
    """The window sizes of ``encode_squad`` checked together: ``max_len`` must leave room for
    ``[CLS] question [SEP] ... [SEP]`` with a query of ``max_query`` tokens and at least one context
    token (GluonNLP's rule: max_seq_length > max_query_length + 3); ``doc_stride`` >= 1."""
    if max_query < 1 or doc_stride < 1:
        raise UserError(f"--max-query-length ({max_query}) and --doc-stride ({doc_stride}) must be >= 1")
    if max_len < max_query + 4:
        raise UserError(f"--max-len {max_len} leaves no room for the context after a question of up to "
                        f"--max-query-length {max_query} tokens and 3 special tokens; raise --max-len above "
                        f"{max_query + 3} or lower --max-query-length")


def doc_windows(num_tokens, room, doc_stride):
    """The ``(start, length)`` windows over a context of ``num_tokens`` tokens, as BERT's and
    GluonNLP's SQuAD features: each holds up to ``room`` tokens, the next starts ``min(length,
    doc_stride)`` tokens later, and the last one reaches the end of the context. A context that fits
    gives one window; an empty one gives ``[(0, 0)]``."""
    windows, start = [], 0
    while True:
        length = min(room, num_tokens - start)
        windows.append((start, length))
        if start + length >= num_tokens:
            return windows
        start += min(length, doc_stride)


def _context_words(context):
    """Whitespace-separated words of ``context`` and, per character, the index of its word."""
    words, char_word, prev_ws = [], [], True
    for ch in context:
        if ch.isspace():
            prev_ws = True
        else:
            if prev_ws:
                words.append(ch)
            else:
                words[-1] += ch
            prev_ws = False
        char_word.append(max(len(words) - 1, 0))
    return words, char_word


SquadFeatures = collections.namedtuple("SquadFeatures", "ids types vlen starts ends windows")
SquadFeatures.__doc__ = """Features of ``encode_squad``, one row per window: token ids, token types and valid
lengths (arrays of shape (F, max_len) and (F,)), the start/end targets (F,), and per window a dict:
``example`` (index of its question), ``offset`` (position of its first context token),
``doc_start`` (that token's index in the whole context), ``tok_word`` (context word of each of its
tokens) and ``words`` (the context's words)."""


def encode_squad(examples, tokenizer, vocab, max_len, max_query=24, doc_stride=32):
    """Features for BERT QA, as GluonNLP's ``SQuADTransform``: the question is truncated to
    ``max_query`` tokens, the context is split into overlapping windows (``doc_windows``: as many
    context tokens as ``max_len`` leaves, each window ``doc_stride`` tokens after the previous one),
    and each window is one row ``[CLS] question [SEP] window [SEP]``.

    Targets: in a window that holds the first answer whole, its first and last token positions;
    in every other window position 0 ([CLS], the null answer: "no answer here"), so an answer
    beyond the first window is learnt from the windows that contain it, and an unanswerable
    question (SQuAD 2.0, no answers) points at [CLS] in all its windows. Returns ``SquadFeatures``;
    the windows of a question are consecutive rows."""
    check_squad_lengths(max_len, max_query, doc_stride)
    rows = []
    for n, ex in enumerate(examples):
        words, char_word = _context_words(ex["context"])
        q = tokenizer(ex["question"])[:max_query]
        toks, tok_word = [], []
        for wi, w in enumerate(words):
            for piece in tokenizer(w):
                toks.append(piece)
                tok_word.append(wi)
        answer = None   # the first answer's first and last context token
        if ex["answers"] and words:
            s_char = ex["answer_start"][0]
            ws = char_word[s_char]
            we = char_word[min(s_char + len(ex["answers"][0]) - 1, len(char_word) - 1)]
            pos = [i for i, w in enumerate(tok_word) if ws <= w <= we]
            if pos:
                answer = (pos[0], pos[-1])
        off = len(q) + 2
        for start, length in doc_windows(len(toks), max_len - len(q) - 3, doc_stride):
            seq = [vocab.cls_token] + q + [vocab.sep_token] + toks[start:start + length] + [vocab.sep_token]
            target = (0, 0)
            if answer and start <= answer[0] and answer[1] < start + length:
                target = (answer[0] - start + off, answer[1] - start + off)
            rows.append((vocab[seq], off, target, {"example": n, "offset": off, "doc_start": start,
                                                    "tok_word": tok_word[start:start + length], "words": words}))
    F = len(rows)
    ids, types, vlen = np.zeros((F, max_len), np.int32), np.zeros((F, max_len), np.int32), np.zeros(F, np.int32)
    starts, ends = np.zeros(F, np.int32), np.zeros(F, np.int32)
    for f, (seq, off, (s, e), _) in enumerate(rows):
        ids[f, :len(seq)] = seq
        types[f, off:len(seq)] = 1
        vlen[f], starts[f], ends[f] = len(seq), s, e
    return SquadFeatures(ids, types, vlen, starts, ends, [r[3] for r in rows])
