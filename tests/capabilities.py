"""Print the values of ATEN_CPU_CAPABILITY that this CPU can run, one per line (`make test-numerics` loops over them).

torch picks its CPU kernels by instruction set, the best the CPU has unless ATEN_CPU_CAPABILITY names a lower
one; results of floating-point work may differ in their last digits between them.
"""

from __future__ import annotations

import platform
from pathlib import Path


def capabilities() -> list[str]:
    found = ["default"]
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return found
    try:
        flags = next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("flags")), [])
    except OSError:
        return found
    if {"avx2", "fma"} <= set(flags):
        found.append("avx2")
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= set(flags):
        found.append("avx512")
    return found


if __name__ == "__main__":
    print("\n".join(capabilities()))
