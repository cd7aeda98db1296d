"""Vision: image data sets (digits embedded, standard formats from local paths), models and recipes."""
