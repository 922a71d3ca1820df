"""A regular (non-editable) install ships the kernels and finds them."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_ships_kernels_and_finds_them(tmp_path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w",
                            str(tmp_path / "wheel"), str(ROOT)], capture_output=True,
                           text=True)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    # the kernels' folders were warned of, one by one, at every build
    assert "would be ignored" not in built.stdout + built.stderr
    (wheel,) = (tmp_path / "wheel").glob("cudabench-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    # `license = "MIT"`'s text
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in shipped), shipped
    sources = sorted(ROOT.glob("kernels/*/*.cu*"))
    assert sources
    for source in sources:
        assert f"cudabench/kernels/{source.parent.name}/{source.name}" in shipped

    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True)
    env = {**os.environ, "PYTHONPATH": str(target), "COLUMNS": "400"}
    listing = subprocess.run([sys.executable, "-m", "cudabench", "list"], cwd=tmp_path,
                             env=env, capture_output=True, text=True, check=True).stdout
    assert str(target / "cudabench" / "kernels" / "matmul" / "tiled.cu") in listing
    assert str(ROOT / "kernels") not in listing
