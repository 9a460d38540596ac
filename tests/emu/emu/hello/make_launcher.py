"""Writes launch.py, which reports the machine it runs on (under emulation: the emulated one)."""

from pathlib import Path

Path("launch.py").write_text(
    "import os, platform\n"
    "assert os.path.isdir(os.environ['ASCEND_TOOLKIT_HOME']), 'no toolkit'\n"
    "print(f'Kernel launch success! on {platform.machine()}')\n"
)
