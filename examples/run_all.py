"""Runs every example: results, compile times and run times.

tilec runs these kernels on the CPU backend (the GPU backend is not built yet).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import layer_norm  # noqa: E402
import matmul  # noqa: E402
import softmax  # noqa: E402
import vector_add  # noqa: E402


def main():
    print(f"tilec examples on the CPU backend ({os.cpu_count()} host threads)")
    for example in (vector_add, softmax, matmul, layer_norm):
        example.main()


if __name__ == "__main__":
    main()
