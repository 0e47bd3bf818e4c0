"""Host tensor descriptors, as Triton's ``triton.tools.tensor_descriptor``: a
tensor with the tile shape a kernel loads and stores through it
(``desc.load([i, j])``, ``desc.store([i, j], x)``). Tiles that cross the tensor's
edges read zeros outside it and write nothing there.

tilec passes a descriptor as its base pointer, sizes and strides; the kernel
sees a block pointer. On sm_90, where the kernel copies its tiles with TMA, the
launcher also encodes a tensor map from them (CUtensorMap, at each launch whose
pointer, sizes or strides changed)."""

from dataclasses import dataclass
from typing import Any, List

import numpy as np


@dataclass
class TensorDescriptor:
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"

    def __post_init__(self):
        self.shape, self.strides = [int(s) for s in self.shape], [int(s) for s in self.strides]
        self.block_shape = [int(b) for b in self.block_shape]
        rank = len(self.shape)
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"TensorDescriptor: shape {self.shape}, strides {self.strides} and "
                             f"block_shape {self.block_shape} must have one entry per dim")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"TensorDescriptor: padding must be 'zero' or 'nan', "
                             f"got {self.padding!r}")

    @staticmethod
    def from_tensor(tensor, block_shape, padding="zero"):
        """A descriptor of a whole torch tensor or numpy array (strides in elements)."""
        if isinstance(tensor, np.ndarray):
            strides = [s // tensor.itemsize for s in tensor.strides]
        else:
            strides = list(tensor.stride())
        return TensorDescriptor(tensor, list(tensor.shape), strides, list(block_shape), padding)
