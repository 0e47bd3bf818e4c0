import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def nonzero(rng, shape, dtype=np.float32, low=0.5, high=2.0):
    """Random values away from zero, with random signs."""
    x = rng.uniform(low, high, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return x.astype(dtype)
