"""Host-side helpers kernels take as arguments (as triton.tools)."""
