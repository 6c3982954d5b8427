"""Free memory on this machine: RAM, and VRAM of NVIDIA GPUs through NVML.

NVML is reached with ctypes on `libnvidia-ml.so.1` (`nvml.dll` on Windows), which
the NVIDIA driver installs; no Python package is needed, and a machine without the
driver simply reports no GPU.
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass

_NVML_NAMES = ("nvml.dll",) if sys.platform == "win32" else ("libnvidia-ml.so.1", "libnvidia-ml.so")


@dataclass(frozen=True)
class GpuMemory:
    index: int
    name: str
    total: int
    free: int


@dataclass(frozen=True)
class MachineMemory:
    """What a fit estimate weighs a model against."""

    ram_total: int
    ram_available: int
    gpus: tuple[GpuMemory, ...] = ()

    @property
    def vram_free(self) -> int:
        """Free VRAM of the first GPU (llama.cpp's main device), 0 without one."""
        return self.gpus[0].free if self.gpus else 0


class _NvmlMemory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


def load_nvml() -> ctypes.CDLL | None:
    """The NVML library, or None when no NVIDIA driver is installed."""
    for name in _NVML_NAMES:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def nvidia_gpus(lib: ctypes.CDLL | None = None) -> tuple[GpuMemory, ...]:
    """Memory of every NVIDIA GPU NVML sees; () when NVML is missing or fails."""
    lib = lib if lib is not None else load_nvml()
    if lib is None:
        return ()
    try:
        if lib.nvmlInit_v2() != 0:
            return ()
    except AttributeError:
        return ()
    gpus = []
    try:
        count = ctypes.c_uint(0)
        if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return ()
        for i in range(count.value):
            handle = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) != 0:
                continue
            mem = _NvmlMemory()
            if lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem)) != 0:
                continue
            name = ctypes.create_string_buffer(96)
            lib.nvmlDeviceGetName(handle, name, 96)
            gpus.append(GpuMemory(i, name.value.decode(errors="replace"), int(mem.total), int(mem.free)))
    finally:
        lib.nvmlShutdown()
    return tuple(gpus)


def ram() -> tuple[int, int]:
    """(total, available) bytes of RAM; available counts reclaimable page cache."""
    try:
        with open("/proc/meminfo") as f:
            info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f if line.split()[1:]}
        return info["MemTotal"], info.get("MemAvailable", info.get("MemFree", 0))
    except (OSError, KeyError, ValueError):
        pass
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        total = os.sysconf("SC_PHYS_PAGES") * page
        avail = os.sysconf("SC_AVPHYS_PAGES") * page
        return total, avail
    except (ValueError, OSError, AttributeError):
        return 0, 0


def machine_memory() -> MachineMemory:
    """RAM and NVIDIA VRAM now."""
    total, available = ram()
    return MachineMemory(total, available, nvidia_gpus())
