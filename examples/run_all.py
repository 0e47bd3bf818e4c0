"""Runs every example: results, compile times and run times.

On the GPU when torch sees one (CUDA tensors, compared with torch), else on
tilec's CPU backend (numpy arrays). The first line says which.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import layer_norm  # noqa: E402
import matmul  # noqa: E402
import softmax  # noqa: E402
import vector_add  # noqa: E402


def main():
    for example in (vector_add, softmax, matmul, layer_norm):
        example.main()


if __name__ == "__main__":
    main()
