#!/usr/bin/python3
"""Writes small .npy files into DIR: the fuzz seeds of the .npy reader (tests/fuzz/run.sh).

Files NumPy itself writes (fp32 of 0 to 4 dimensions, the 2.0 format, Fortran order, other dtypes
and byte orders the reader refuses), so that the fuzzer starts from every header form.
Usage: make_npy_seeds.py DIR
"""
import os
import sys

import numpy as np
from numpy.lib import format as npy_format


def main() -> None:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(1)
    arrays = {
        "scalar": np.float32(1.5),
        "empty": np.zeros((0,), np.float32),
        "vector": np.arange(5, dtype=np.float32),
        "matrix": rng.standard_normal((2, 3)).astype(np.float32),
        "nchw": rng.integers(-3, 4, (1, 2, 3, 3)).astype(np.float32),
        "ncdhw": np.ones((1, 1, 2, 2, 2), np.float32),
        "fortran": np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
        "big_endian": np.arange(4, dtype=">f4"),
        "float64": np.arange(3, dtype=np.float64),
        "int32": np.arange(3, dtype=np.int32),
    }
    for name, a in arrays.items():
        np.save(os.path.join(out, name + ".npy"), a)
    # The 2.0 and 3.0 formats (4-byte header length; 3.0: a UTF-8 header).
    for version in ((2, 0), (3, 0)):
        with open(os.path.join(out, "v%d.npy" % version[0]), "wb") as f:
            npy_format.write_array(f, np.arange(4, dtype=np.float32).reshape(2, 2),
                                   version=version)


if __name__ == "__main__":
    main()
