"""``triton.profiler.hooks``: the launch hooks a session installs."""

from .profile import _launch_enter as launch_enter, _launch_exit as launch_exit  # noqa: F401


class HookManager:
    """Which profiling hooks are installed (all of them while a session runs)."""

    @staticmethod
    def active():
        from . import profile
        return profile.state() is not None
