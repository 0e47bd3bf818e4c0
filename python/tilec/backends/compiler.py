"""``triton.backends.compiler``: what names a compilation target and the
interface of a backend's compiler, as Triton declares them. tilec's two
backends (``nvidia``: PTX; ``cpu``: the reference executor) implement it."""

import enum
from abc import ABCMeta, abstractmethod
from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class GPUTarget:
    """A compilation target: backend ("cuda", "cpu"), architecture (90 for
    compute capability 9.0) and warp size."""
    backend: str
    arch: Union[int, str]
    warp_size: int


class Language(enum.Enum):
    """The language a kernel is written in."""
    TRITON = 0
    GLUON = 1


class BaseBackend(metaclass=ABCMeta):
    """A backend's compiler: which targets it takes, its options and its hash."""

    def __init__(self, target: GPUTarget) -> None:
        if not self.supports_target(target):
            raise ValueError(f"{type(self).__name__} does not compile for {target}")
        self.target = target

    @staticmethod
    @abstractmethod
    def supports_target(target: GPUTarget) -> bool:
        ...

    @abstractmethod
    def hash(self) -> str:
        """A text that changes whenever the code this backend makes could."""

    @abstractmethod
    def parse_options(self, options: dict) -> object:
        """The backend's options object from a dict of launch options."""

    def get_codegen_implementation(self, options):
        return {}

    def get_module_map(self):
        return {}

    def load_dialects(self, context):
        pass

    def add_stages(self, stages, options, language=Language.TRITON):
        pass

    def pack_metadata(self, metadata):
        return (metadata.num_warps, metadata.num_ctas, metadata.shared)
