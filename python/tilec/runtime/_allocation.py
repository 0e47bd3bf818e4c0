"""``triton.set_allocator``: the function that gives kernels global scratch
memory. tilec's kernels need none (tensor descriptors made in a kernel live in
registers), so the allocator is kept for code that sets and reads it."""


class NullAllocator:
    """The allocator until one is set: asking it for memory is an error."""

    def __call__(self, size, alignment, stream):
        raise RuntimeError("kernel requested global scratch memory but no allocator was set; "
                           "use triton.set_allocator to specify one")


_allocator = NullAllocator()


def set_allocator(allocator):
    """Sets the scratch allocator: ``allocator(size, alignment, stream)``."""
    global _allocator
    _allocator = allocator


def get_allocator():
    return _allocator
