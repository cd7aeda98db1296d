"""gluon_suite: an MXNet/Gluon toolkit suite for vision, language and graph models.

Three domain packages (``cv``, ``nlp``, ``graph``) stand on one model zoo (``model_zoo``), the
what-if analyser (``whatif``), one distributed-training layer (``distributed``) and the optimizers
and schedules (``optim``); see docs/design.md. Importing the top-level package is cheap: it does not
import MXNet or Horovod; the subpackages do.
"""
__version__ = "0.1.0"
