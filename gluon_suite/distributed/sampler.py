"""The order in which a training job visits its samples: one shuffled order per epoch, fixed by
(seed, epoch), cut into global steps of ``batch_size x workers`` samples and dealt out to the
workers of the moment.

The same sampler serves a fixed world and Horovod Elastic: after a resize only the samples the
epoch has not yet seen are dealt out again, over the new workers, so none is repeated or skipped;
its position (``state_dict``) is what a checkpoint or an elastic commit needs to continue an epoch
midway.
"""
import numpy as np


class EpochSampler:
    """Shuffled sample order of an epoch, sharded over the current workers by what is left.

    Every global step gives each worker at least one sample: a remainder smaller than the worker
    count joins the epoch's last step. Only when the job grows right at the end of an epoch, so
    that fewer samples are left than workers, does the epoch end with those (< workers) unseen.
    ``per_epoch`` (default: all ``num_samples``) cuts every epoch short after that many samples of
    its order, for quick runs."""

    def __init__(self, num_samples, seed=0, shuffle=True, per_epoch=None):
        self.n, self.seed, self.shuffle = int(num_samples), int(seed), shuffle
        self.per_epoch = self.n if per_epoch is None else min(self.n, int(per_epoch))
        self.epoch, self.processed, self.skipped = 0, 0, 0
        self.rank, self.size = 0, 1
        self._perm, self._perm_epoch = None, None

    def set_epoch(self, epoch):
        """Start ``epoch``: nothing processed yet."""
        self.epoch, self.processed, self.skipped = int(epoch), 0, 0

    def reshard(self, rank, size):
        """Shard the remaining samples of the epoch over ``size`` workers."""
        self.rank, self.size = int(rank), int(size)

    def order(self):
        """The epoch's full sample order (the same on every worker)."""
        if self._perm_epoch != self.epoch:
            rs = np.random.RandomState((self.seed * 1_000_003 + self.epoch) % 2 ** 31)
            self._perm = rs.permutation(self.n) if self.shuffle else np.arange(self.n)
            self._perm_epoch = self.epoch
        return self._perm

    def next_batch(self, batch_size, position=None):
        """This worker's indices for the next global step, and the global step's sample count;
        ``(None, 0)`` when the epoch is done. Step the trainer with ``step_size(count)`` and call
        ``advance(count)`` after the step. ``position`` (default: the samples processed so far)
        asks for a later step, for a loader that reads ahead."""
        rest = self.order()[self.processed if position is None else position:self.per_epoch]
        if len(rest) < self.size:
            # fewer samples left than workers (possible only when the job grew near the end of
            # the epoch): not one for everyone, so the epoch ends here (at most size-1 unseen)
            self.skipped = len(rest)
            return None, 0
        take = batch_size * self.size
        if len(rest) - take < self.size:  # a remainder too small to share goes with this step
            take = len(rest)
        glob = rest[:take]
        return glob[self.rank::self.size], len(glob)

    def epoch_over(self):
        """Whether every sample of the epoch (``per_epoch`` of them) has been processed."""
        return self.processed >= self.per_epoch

    def steps_left(self, batch_size):
        """Global steps left in the epoch at the current worker count (for a progress bar)."""
        rest = self.per_epoch - self.processed
        return rest // (batch_size * self.size) if rest >= batch_size * self.size else int(rest >= self.size)

    def step_size(self, count):
        """The ``batch_size`` to pass to ``trainer.step`` for a global step of ``count`` samples:
        ``count / size``. At the end of an epoch the workers' shares may differ by one sample;
        normalising every worker's gradient sum by the same number keeps the averaged gradient
        the mean over the global batch, and identical on every worker."""
        return count / self.size

    def advance(self, count):
        """Mark ``count`` more samples of the epoch as processed (by all workers together)."""
        self.processed += int(count)

    def state_dict(self):
        """JSON-ready position."""
        return {"epoch": self.epoch, "processed": self.processed}

    def load_state_dict(self, d):
        """Restore the position."""
        self.epoch, self.processed, self.skipped = int(d["epoch"]), int(d["processed"]), 0


def progress_of(sampler):
    """Training progress in epochs (``epoch + processed / per_epoch``): the same on every worker
    whatever their number, so a schedule of it (cosine over epochs, warm-up) needs no step count."""
    return sampler.epoch + sampler.processed / max(sampler.per_epoch, 1)


VIRTUAL_STEPS = 1000  # a schedule over epochs is written for this many steps per epoch


def over_epochs(schedule, sampler):
    """``schedule`` (written for ``VIRTUAL_STEPS`` steps per epoch) as a function of the training
    progress, whatever the worker count and hence the real number of steps per epoch."""
    return lambda t: schedule(int(progress_of(sampler) * VIRTUAL_STEPS) + 1)
