"""Optimizers registered with MXNet by name: ``'lans'`` and ``'adaalter'`` (LAMB is MXNet's own
``'lamb'``). Importing ``gluon_suite.dist`` registers them, so ``gluon.Trainer(params, 'lans', ...)``
and ``DistributedTrainer(params, 'lans', ...)`` both work."""
from .adaalter import AdaAlter
from .common import check_hyperparameters, exclude_from_weight_decay
from .lans import LANS

__all__ = ["LANS", "AdaAlter", "exclude_from_weight_decay", "check_hyperparameters"]
