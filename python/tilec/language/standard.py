"""Helpers of Triton's standard library that are written in the kernel
language itself (as tl.rand is, in random.py)."""

import tilec.language as tl

from ..jit import jit


@jit
def swizzle2d(i, j, size_i, size_j, size_g):
    """Maps (i, j) of a size_i x size_j grid so that consecutive indices walk
    columns of groups of `size_g` rows (grouped ordering: neighbouring programs
    share rows of A and columns of B in L2). Returns the new (i, j)."""
    linear = i * size_j + j
    group_size = size_g * size_j
    first_row = (linear // group_size) * size_g
    rows = tl.minimum(size_i - first_row, size_g)  # the last group may be short
    within = linear % group_size
    return first_row + within % rows, within // rows
