"""Vision models registered in the zoo."""
from .small import digits_cnn

__all__ = ["digits_cnn"]
