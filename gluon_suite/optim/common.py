"""Shared checks and helpers for the suite's optimizers."""
import re


def check_hyperparameters(learning_rate=None, beta1=None, beta2=None, epsilon=None, wd=None):
    """Raise ValueError naming the valid range for a learning rate < 0, a beta outside [0, 1),
    epsilon <= 0 or weight decay < 0."""
    if learning_rate is not None and not learning_rate >= 0:
        raise ValueError(f"learning_rate must be >= 0, got {learning_rate}")
    for name, b in (("beta1", beta1), ("beta2", beta2)):
        if b is not None and not 0.0 <= b < 1.0:
            raise ValueError(f"{name} must be in [0, 1), got {b}")
    if epsilon is not None and not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    if wd is not None and not wd >= 0:
        raise ValueError(f"wd (weight decay) must be >= 0, got {wd}")


_NO_DECAY = re.compile(r"(_bias|_beta|_gamma|layernorm|batchnorm|_running_)", re.IGNORECASE)


def exclude_from_weight_decay(params, pattern=None):
    """Set ``wd_mult = 0`` on biases and normalisation parameters (BatchNorm/LayerNorm gamma and
    beta), as BERT and ResNeSt recipes do; ``pattern`` (a regex on parameter names) replaces the
    default rule. Returns the names that were excluded."""
    rule = re.compile(pattern) if pattern else _NO_DECAY
    items = params.items() if hasattr(params, "items") else ((p.name, p) for p in params)
    excluded = []
    for name, p in items:
        if rule.search(name) or rule.search(p.name):
            p.wd_mult = 0.0
            excluded.append(name)
    return excluded
