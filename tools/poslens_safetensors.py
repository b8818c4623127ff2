"""safetensors read and write without the Python package (Debian has no python3-safetensors),
for tools/poslens_reference.py."""
from __future__ import annotations

import json
import struct
from collections import OrderedDict
from typing import Any, Dict, Optional, Tuple

import numpy as np
import torch

Tensor = torch.Tensor

# ----------------------------------------------------------------------------------------------
# safetensors (no Python package needed): 8-byte LE header length, JSON header, raw LE bytes.
# ----------------------------------------------------------------------------------------------
_ST = {"F64": (torch.float64, "<f8"), "F32": (torch.float32, "<f4"), "F16": (torch.float16, "<f2"),
       "BF16": (torch.bfloat16, "<i2"), "I64": (torch.int64, "<i8"), "I32": (torch.int32, "<i4"),
       "I16": (torch.int16, "<i2"), "I8": (torch.int8, "i1"), "U8": (torch.uint8, "u1"),
       "BOOL": (torch.bool, "?")}
_ST_CODE = {dt: code for code, (dt, _) in _ST.items()}


def save_safetensors(tensors: Dict[str, Tensor], path: str,
                     metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes {name: tensor} (any dtype of _ST) to a .safetensors file."""
    header: Dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, offset = [], 0
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        if t.dtype not in _ST_CODE:
            raise ValueError(f"save_safetensors: unsupported dtype {t.dtype} of {name}")
        code = _ST_CODE[t.dtype]
        arr = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()
        raw = arr.astype(np.dtype(_ST[code][1]), copy=False).tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # align the data to 8 bytes, as the official writer does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def load_safetensors(path: str) -> Tuple["OrderedDict[str, Tensor]", Dict[str, str]]:
    """Reads a .safetensors file: ({name: tensor}, metadata)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", None) or {}
    out: "OrderedDict[str, Tensor]" = OrderedDict()
    for name, info in header.items():
        dtype, np_code = _ST[info["dtype"]]
        begin, end = info["data_offsets"]
        arr = np.frombuffer(data, dtype=np.dtype(np_code), count=(end - begin) // np.dtype(np_code).itemsize,
                            offset=8 + n + begin).astype(np.dtype(np_code).newbyteorder("="))
        t = torch.from_numpy(arr.copy())
        if dtype == torch.bfloat16:
            t = t.view(torch.bfloat16)
        out[name] = t.reshape(info["shape"])
    return out, metadata
