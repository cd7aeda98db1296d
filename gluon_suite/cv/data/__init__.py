"""Image data sets: scikit-learn's bundled digits as the embedded default."""
from .digits import load_digits, DIGITS_CLASSES

__all__ = ["load_digits", "DIGITS_CLASSES"]
