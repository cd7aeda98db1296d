"""GluonNLP's big LSTM language model (``big_rnn_lm_2048_512``: LSTMP cells, importance-sampled softmax)
for the word-LM recipe (``language_model``): the model the Local AdaAlter authors trained
(docs/methods.md, "AdaAlter and Local AdaAlter"; docs/nlp.md, "The big LM").

``SampledSoftmaxLM`` wraps GluonNLP's training ``BigRNN`` with dense weights and gradients (the
suite's distributed trainer averages dense tensors; GluonNLP's row-sparse option is not used) and
adds what the recipe needs from it:

- training (``sampled_window``): ``num_sampled`` candidate words are drawn per window from the
  log-uniform (Zipfian) distribution over the vocabulary, which is sorted by frequency, with
  replacement, on the model's device (MXNet's ``rand_zipfian``); the true word's logit and the
  candidates' logits, each less the log of its expected count, with accidental hits removed, go
  through a softmax cross-entropy whose target is the true word (GluonNLP's ``ISDense``). This is the
  "sampled softmax" loss: its perplexity (logged as the training perplexity) is not the model's;
- evaluation (``forward``): the full softmax over the vocabulary with the same decoder weights, so
  validation and test perplexities are exact and comparable with the other word LMs.
"""
import mxnet as mx
from mxnet import gluon

BIG = "big_rnn_lm_2048_512"
SAMPLES = 8192   # GluonNLP's large-LM script's default number of sampled candidates (--k)


def own_sizes():
    """GluonNLP's settings of ``big_rnn_lm_2048_512`` and the script's default candidate count."""
    import gluonnlp as nlp
    return {**nlp.model.language_model.big_rnn_lm_2048_512_hparams, "num_sampled": SAMPLES}


class SampledSoftmaxLM(gluon.Block):
    """GluonNLP's ``BigRNN`` trained with a sampled softmax, evaluated with the full softmax.
    ``forward(x, hidden)`` -> (logits over the vocabulary ``(T, N, V)``, new hidden state);
    ``sampled_window(x, y, hidden)`` -> (sampled logits ``(T, N, 1 + num_sampled)``, new hidden state,
    targets ``(T, N)``: always 0, the true word's column)."""

    def __init__(self, vocab_size, embed_size, hidden_size, num_layers, projection_size, num_sampled,
                 embed_dropout=0.0, encode_dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        import gluonnlp as nlp
        if not 0 < int(num_sampled) < int(vocab_size):
            raise ValueError(f"the sampled softmax needs 0 < num_sampled < the vocabulary size, got "
                             f"{num_sampled} candidates for {vocab_size} words; give a smaller --k")
        self.vocab_size, self.num_sampled, self.projection_size = int(vocab_size), int(num_sampled), int(projection_size)
        with self.name_scope():
            self.model = nlp.model.train.BigRNN(self.vocab_size, embed_size, hidden_size, num_layers,
                                                self.projection_size, self.num_sampled, embed_dropout=embed_dropout,
                                                encode_dropout=encode_dropout, sparse_weight=False, sparse_grad=False)

    def hybridize(self, active=True, **kwargs):
        """Left imperative: MXNet 1.9.1 crashes (a segmentation fault in backward) when GluonNLP's
        training BigRNN runs with its cells hybridized."""

    def begin_state(self, **kwargs):
        return self.model.begin_state(**kwargs)

    def _encode(self, x, hidden):
        m = self.model
        return m.encoder.unroll(x.shape[0], m.embedding(x), hidden, layout="TNC", merge_outputs=True)

    def forward(self, x, hidden):   # pylint: disable=arguments-differ
        encoded, hidden = self._encode(x, hidden)
        dec = self.model.decoder
        t, n = x.shape[:2]
        logits = mx.nd.FullyConnected(encoded.reshape((-1, self.projection_size)), weight=dec.weight.data(x.context),
                                      bias=dec.bias.data(x.context), num_hidden=self.vocab_size)
        return logits.reshape((t, n, -1)), hidden

    def draw(self, y):
        """The window's candidates for targets ``y``: (candidates, expected count of each candidate,
        expected count of each target), the order GluonNLP's decoder takes."""
        cand, exp_true, exp_cand = mx.nd.contrib.rand_zipfian(y.reshape((-1,)), self.num_sampled, self.vocab_size,
                                                              ctx=y.context)
        return cand, exp_cand, exp_true

    def sampled_window(self, x, y, hidden):
        """One training window's sampled logits, new hidden state and targets (call under
        ``autograd.record``)."""
        out, hidden, target = self.model(x, y, hidden, self.draw(y))
        return out, hidden, target


def build(vocab_size, **sizes):
    """``SampledSoftmaxLM`` with GluonNLP's settings of ``big_rnn_lm_2048_512`` overridden by ``sizes``
    (``embed_size``, ``hidden_size``, ``num_layers``, ``projection_size``, ``num_sampled``,
    ``embed_dropout``, ``encode_dropout``)."""
    return SampledSoftmaxLM(vocab_size, **{**own_sizes(), **sizes})
