"""A worker of tests/cv/test_fixed_and_elastic.py: the quick-start job on two CPU contexts per
worker in float16 (emulated), fixed-size or elastic (``ELASTIC=1``); rank 0 writes the result."""
import json
import os
import sys

sys.path.insert(0, os.environ["REPO"])

import mxnet as mx  # noqa: E402

from gluon_suite.cv.quickstart import train_digits  # noqa: E402
from gluon_suite.distributed import get_communicator  # noqa: E402

out = os.environ["OUT"]
res = train_digits({"epochs": 2, "batch_size": 16, "lr": 0.05, "seed": 2, "progress": False, "out": out,
                    "elastic": os.environ.get("ELASTIC") == "1", "dtype": "float16"},
                   get_communicator(), ctx=[mx.cpu(0), mx.cpu(1)])
if res["rank"] == 0:
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(res, f)
