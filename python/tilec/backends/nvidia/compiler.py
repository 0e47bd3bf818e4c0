"""``triton.backends.nvidia.compiler``: the CUDA backend's compiler as Triton's
interface presents it: its options (`CUDAOptions`) and `CUDABackend`. tilec's
C++ compiler does the work (see tilec.compiler)."""

import dataclasses
import hashlib

from ... import _C
from ..compiler import BaseBackend, GPUTarget


@dataclasses.dataclass(frozen=True)
class CUDAOptions:
    num_warps: int = 4
    num_ctas: int = 1
    num_stages: int = 3
    maxnreg: int = None
    enable_fp_fusion: bool = True
    launch_pdl: bool = False
    launch_cooperative_grid: bool = False
    debug: bool = False
    arch: str = None
    ptx_version: int = None
    supported_fp8_dtypes: tuple = ("fp8e5", "fp8e4nv")
    deprecated_fp8_dot_operand_dtypes: tuple = ()
    default_dot_input_precision: str = "tf32"
    allowed_dot_input_precisions: tuple = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")
    max_num_imprecise_acc_default: int = 0
    extern_libs: tuple = None
    backend_name: str = "cuda"
    sanitize_overflow: bool = True

    def hash(self):
        text = "_".join(f"{k}-{v}" for k, v in sorted(dataclasses.asdict(self).items()))
        return hashlib.sha256(text.encode()).hexdigest()


def sm_arch(capability):
    """The PTX target of a compute capability: sm_90a for 90, else sm_XY."""
    capability = int(capability)
    return f"sm_{capability}a" if capability // 10 == 9 else f"sm_{capability}"


class CUDABackend(BaseBackend):

    @staticmethod
    def supports_target(target: GPUTarget):
        return target.backend == "cuda"

    def __init__(self, target: GPUTarget) -> None:
        super().__init__(target)
        self.binary_ext = "cubin"

    def hash(self):
        return f"tilec-{_C.arch_number(sm_arch(self.target.arch))}"

    def parse_options(self, options):
        fields = {f.name for f in dataclasses.fields(CUDAOptions)}
        args = {k: v for k, v in dict(options).items() if k in fields and v is not None}
        args.setdefault("arch", sm_arch(self.target.arch))
        if int(self.target.arch) < 89:
            args["supported_fp8_dtypes"] = ("fp8e5",)
        return CUDAOptions(**args)

    def get_codegen_implementation(self, options):
        capability = int(self.target.arch)
        return {"min_dot_size": lambda lhs, rhs: (16, 16, 16 if capability >= 80 else 8)}
