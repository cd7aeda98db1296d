"""Progress bars that show only where a user is watching: rank 0, and not when disabled."""
from tqdm.auto import tqdm


def progress(iterable=None, total=None, desc=None, enabled=True, **kwargs):
    """Wrap ``iterable`` in a tqdm bar when ``enabled`` (pass ``rank == 0``), else return it as is."""
    if not enabled:
        return iterable if iterable is not None else range(total or 0)
    return tqdm(iterable, total=total, desc=desc, dynamic_ncols=True, leave=False, mininterval=0.5,
                **kwargs)
