"""The loss of BERT pretraining: masked-LM cross-entropy per instance plus next-sentence
cross-entropy, and the sums (``STATS``) a step reports for the logs and the held-out evaluation."""
import mxnet as mx
from mxnet import gluon

STATS = ("mlm_loss_sum", "nsp_loss_sum", "mlm_correct", "mlm_count", "nsp_correct", "instances")   # a step's sums


class BertPretrainLoss:
    """Per-instance loss: mean MLM cross-entropy over the instance's masked tokens plus the NSP
    cross-entropy; the batch loss is the mean over instances (so that B instances on each of n
    workers give exactly the gradient of n*B instances on one)."""

    def __init__(self, vocab_size, dtype="float32"):
        self.V = vocab_size
        self.dtype = dtype
        self.ce = gluon.loss.SoftmaxCrossEntropyLoss()

    def __call__(self, net, batch):
        ids, types, vlen, mpos, mids, mw, nsp = batch
        # the valid length in the network's dtype (as GluonNLP's float16 scripts); the scores and
        # the loss in float32 (a float16 softmax over the vocabulary loses precision)
        _, _, nsp_score, mlm_score = net(ids, types, vlen.astype(self.dtype), mpos)
        nsp_score, mlm_score = nsp_score.astype("float32", copy=False), mlm_score.astype("float32", copy=False)
        B, P = mids.shape
        tok = self.ce(mlm_score.reshape((-1, self.V)), mids.reshape((-1,))).reshape((B, P)) * mw
        mlm = tok.sum(axis=1) / mx.nd.maximum(mw.sum(axis=1), 1.0)
        nspl = self.ce(nsp_score, nsp)
        loss = mlm + nspl
        stats = {"mlm_loss_sum": mlm.sum(), "nsp_loss_sum": nspl.sum(),
                 "mlm_correct": ((mlm_score.argmax(axis=-1) == mids.astype("float32")) * mw).sum(),
                 "mlm_count": mw.sum(),
                 "nsp_correct": (nsp_score.argmax(axis=-1) == nsp.astype("float32")).sum()}
        return loss, stats
