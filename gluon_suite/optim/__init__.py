"""Optimizers and learning-rate schedules, like ``torch.optim`` and ``gluonnlp.optimizer``.

Optimizers are registered with MXNet by name: ``'lans'`` and ``'adaalter'`` (LAMB is MXNet's own
``'lamb'``); importing ``gluon_suite.optim`` (or ``gluon_suite.distributed``, which imports it)
registers them, so ``gluon.Trainer(params, 'lans', ...)`` and ``DistributedTrainer(params, 'lans',
...)`` both work. Schedules are ``mx.lr_scheduler.LRScheduler`` subclasses, the elastic ramp among
them; they serve single-process training as much as distributed training."""
from .adaalter import AdaAlter
from .common import check_hyperparameters, exclude_from_weight_decay
from .lans import LANS
from .schedules import ElasticRamp, Sequential, WarmupConstantDecay, WarmupCosine, WarmupMultiStep

__all__ = ["LANS", "AdaAlter", "exclude_from_weight_decay", "check_hyperparameters",
           "ElasticRamp", "Sequential", "WarmupConstantDecay", "WarmupCosine", "WarmupMultiStep"]
