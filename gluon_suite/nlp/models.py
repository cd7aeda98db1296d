"""BERT configurations registered in the zoo, built with GluonNLP's ``BERTEncoder``/``BERTModel``.

``get_model("bert_4_256_4", vocab_size=len(vocab))`` returns a GluonNLP ``BERTModel`` with the
pretraining heads: the masked-LM decoder and the next-sentence classifier. Its forward is
``net(token_ids, token_types, valid_length, masked_positions)`` ->
``(sequence, pooled, nsp_scores, mlm_scores)``. Small configurations are for CPU runs.
"""
from gluonnlp.model.bert import BERTEncoder, BERTModel, bert_hparams

from ..model_zoo import register_model

# name -> (layers, units, hidden, heads): one registered constructor per row
BERT_CONFIGS = {
    "bert_12_768_12": (12, 768, 3072, 12),
    "bert_24_1024_16": (24, 1024, 4096, 16),
    "bert_2_128_2": (2, 128, 512, 2),
    "bert_4_256_4": (4, 256, 1024, 4),
}


def build_bert(layers, units, hidden, heads, vocab_size, max_length=512, dropout=0.1,
               use_pooler=True, use_decoder=True, use_classifier=True):
    """A GluonNLP ``BERTModel`` of the given size (GELU, LayerNorm eps 1e-12, 2 token types)."""
    if vocab_size is None or vocab_size < 5:
        raise ValueError("vocab_size is required (the size of the BERT vocabulary, >= 5)")
    encoder = BERTEncoder(num_layers=layers, units=units, hidden_size=hidden, max_length=max_length,
                          num_heads=heads, dropout=dropout, output_attention=False,
                          output_all_encodings=False, activation="gelu", layer_norm_eps=1e-12)
    return BERTModel(encoder, vocab_size, token_type_vocab_size=2, units=units, embed_size=units,
                     use_pooler=use_pooler, use_decoder=use_decoder, use_classifier=use_classifier)


def _make(name, layers, units, hidden, heads):
    def build(vocab_size=30522, **kwargs):
        return build_bert(layers, units, hidden, heads, vocab_size, **kwargs)
    build.__name__ = name
    build.__doc__ = f"BERT {layers} layers x {units} units, {heads} heads (GluonNLP), MLM + NSP heads"
    return register_model(name, task="masked-lm")(build)


for _name, _row in BERT_CONFIGS.items():
    if _name in bert_hparams:  # the published sizes must match GluonNLP's own table
        h = bert_hparams[_name]
        assert (h["num_layers"], h["units"], h["hidden_size"], h["num_heads"]) == _row
    globals()[_name] = _make(_name, *_row)

__all__ = list(BERT_CONFIGS) + ["build_bert", "BERT_CONFIGS"]


# the zoo's pretrained BERT: bert_2_128_2 pretrained with LANS on gensim's Lee background corpus
# (configs/nlp/bert_tiny_lee.yaml); its WordPiece vocabulary ships beside it as "NAME:vocab"
@register_model("bert_2_128_2_lee", task="masked-lm")
def bert_2_128_2_lee(vocab_size=4156, max_length=128, **kwargs):
    """BERT 2 layers x 128 units, 2 heads, pretrained on the Lee corpus (4,156-token vocabulary)."""
    return build_bert(2, 128, 512, 2, vocab_size, max_length=max_length, **kwargs)


__all__.append("bert_2_128_2_lee")

# GluonNLP's word language models (awd_lstm_lm_*, standard_lstm_lm_*) register with the zoo where their
# recipe lives
from . import language_model as _language_model  # noqa: E402,F401
