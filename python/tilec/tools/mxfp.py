"""``triton.tools.mxfp``: host-side OCP microscaling tensors for tests and
examples: `MXFP4Tensor` (e2m1 values, one per uint8, packable two per byte)
and `MXScaleTensor` (e8m0 power-of-two scales). Written with torch."""

import torch

# The eight magnitudes of e2m1, by their 3-bit code (exponent 2 bits, mantissa 1).
_E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


class MXFP4Tensor:
    """e2m1 values held as one 4-bit code per uint8 (`data`): bit 3 the sign,
    bits 2-1 the exponent, bit 0 the mantissa. Built from a float tensor
    (rounded to nearest, ties to even code, saturating at +-6) or as `size`
    zeros to be filled by `random()`."""

    def __init__(self, data=None, size=None, device=None):
        if data is not None:
            self.device = data.device
            self.data = self._encode(data.to(torch.float32))
            self.size = tuple(data.shape)
        elif size is not None:
            self.device = device
            self.size = tuple(size) if isinstance(size, (tuple, list)) else (size,)
            self.data = torch.zeros(self.size, dtype=torch.uint8, device=device)
        else:
            raise ValueError("MXFP4Tensor needs data or a size")

    def random(self):
        """Random codes, every one of the 16 equally likely."""
        self.data = torch.randint(0, 16, self.size, dtype=torch.uint8, device=self.device)
        return self

    @staticmethod
    def _encode(values):
        magnitudes = torch.tensor(_E2M1_MAGNITUDES, device=values.device)
        mag = values.abs().nan_to_num(nan=0.0, posinf=6.0).clamp(max=6.0)
        # The nearest representable magnitude; on a tie, the even code.
        distance = (mag.unsqueeze(-1) - magnitudes).abs()
        best = distance.min(dim=-1, keepdim=True).values
        ties = distance == best
        codes = torch.arange(8, device=values.device)
        even_first = torch.where(ties, (codes % 2) * 8 + codes, torch.full_like(codes, 64))
        code = even_first.argmin(dim=-1).to(torch.uint8)
        sign = (torch.signbit(values) & ~torch.isnan(values)).to(torch.uint8) << 3
        return (sign | code).to(torch.uint8)

    def to(self, dtype):
        """The values as floats of `dtype`."""
        magnitudes = torch.tensor(_E2M1_MAGNITUDES, device=self.data.device)
        mag = magnitudes[(self.data & 0x7).long()]
        return torch.where((self.data & 0x8) != 0, -mag, mag).to(dtype)

    def to_packed_tensor(self, dim):
        """Two codes a byte along `dim` (the even index in the low nibble), that
        dimension padded to an even length with zeros."""
        assert 0 <= dim < self.data.dim(), f"cannot pack along dim {dim} of a {self.data.dim()}-d tensor"
        data = self.data
        if data.shape[dim] % 2:
            pad_shape = list(data.shape)
            pad_shape[dim] = 1
            data = torch.cat([data, torch.zeros(pad_shape, dtype=data.dtype, device=data.device)],
                             dim=dim)
        low = data.narrow(dim, 0, data.shape[dim] // 2 * 2)
        index = torch.arange(0, low.shape[dim], 2, device=data.device)
        even = low.index_select(dim, index)
        odd = low.index_select(dim, index + 1)
        return (even | (odd << 4)).to(torch.uint8)

    def unpack_packed_tensor(self, packed, dim, original_shape):
        """The codes of a packed tensor, cut back to `original_shape`."""
        low = packed & 0x0F
        high = (packed >> 4) & 0x0F
        stacked = torch.stack([low, high], dim=dim + 1)
        shape = list(packed.shape)
        shape[dim] *= 2
        unpacked = stacked.reshape(shape)
        return unpacked.narrow(dim, 0, original_shape[dim]).contiguous()


class MXScaleTensor:
    """e8m0 scales held as uint8 exponents (`data`): the value is 2**(e - 127),
    255 is NaN. Built from float tensor values (non-positive and non-finite
    values become NaN; others round to the nearest power of two in log2) or as
    `size` zeros to be filled by `random()`."""

    def __init__(self, data=None, size=None, device=None):
        if data is not None:
            self.device = data.device
            self.data = self._encode(data.to(torch.float32))
            self.size = tuple(data.shape)
        elif size is not None:
            self.device = device
            self.size = tuple(size) if isinstance(size, (tuple, list)) else (size,)
            self.data = torch.zeros(self.size, dtype=torch.uint8, device=device)
        else:
            raise ValueError("MXScaleTensor needs data or a size")

    def random(self, low=None, high=None):
        """Random scales, each in [low, high] (exponents 0..254 where unbounded)."""
        lo = 0 if low is None else max(0, int(torch.tensor(float(low)).log2().floor()) + 127)
        hi = 254 if high is None else min(254, int(torch.tensor(float(high)).log2().floor()) + 127)
        if lo > hi:
            raise ValueError(f"no e8m0 scale lies in [{low}, {high}]")
        self.data = torch.randint(lo, hi + 1, self.size, dtype=torch.uint8, device=self.device)
        return self

    @staticmethod
    def _encode(values):
        valid = torch.isfinite(values) & (values > 0)
        exponent = torch.round(torch.log2(torch.where(valid, values, torch.ones_like(values))))
        code = (exponent + 127).clamp(0, 254).to(torch.uint8)
        return torch.where(valid, code, torch.full_like(code, 255))

    def to(self, dtype):
        values = torch.exp2(self.data.to(torch.float32) - 127)
        return torch.where(self.data == 255, torch.full_like(values, float("nan")), values).to(dtype)
