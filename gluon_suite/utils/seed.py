"""Seeding of every random number generator a training run uses."""
import random

import numpy as np


def seed_everything(seed):
    """Seed Python's ``random``, NumPy's global RNG and MXNet's RNG with ``seed``.

    Synchronised compressors (GRBS, random-k) keep their own generators and do not depend on this.
    """
    import mxnet as mx

    random.seed(seed)
    np.random.seed(seed)
    mx.random.seed(seed)
