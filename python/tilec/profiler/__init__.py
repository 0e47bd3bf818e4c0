"""``triton.profiler`` (proton): a per-kernel GPU profile, as Triton's tutorials
use it: ``start(name, hook="triton")``, ``activate``/``deactivate``,
``scope(name, metrics)``, ``finalize()``, then ``viewer.parse`` and
``viewer.print_tree`` on the ``<name>.hatchet`` file it writes.

Every tilec kernel launched while a session is active is timed on its stream
with a pair of CUDA events (the wall clock on the CPU backend) and counted under
the scopes open at its launch, by the name its ``launch_metadata`` gives (else
the kernel's), with the metrics that returns (``flops16``, ``bytes``, ...).
A scope also times the GPU work between its entry and exit on the current
stream, so work tilec does not launch (cuBLAS, torch) is measured as its scope.
"""

from .profile import (  # noqa: F401
    activate, deactivate, enter_scope, exit_scope, finalize, scope, start, state)
from . import viewer  # noqa: F401
