"""The model zoo: one registry for cv/nlp/graph constructors and a verified checkpoint store.

    from gluon_suite.model_zoo import get_model, list_models
    net = get_model("digits_cnn", pretrained=True)
"""
from .registry import ModelNotFound, get_model, list_models, register_model, resolve
from .store import ZooError, cache_root, checkpoint_path, fetch, load_records

__all__ = ["ModelNotFound", "get_model", "list_models", "register_model", "resolve", "ZooError",
           "cache_root", "checkpoint_path", "fetch", "load_records"]
