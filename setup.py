"""The Python package (python/scalemodel) with its compiled engine, built by the project's CMake
for the interpreter that installs it: `pip install --no-build-isolation .` (pyproject.toml).
SCALEMODEL_BUILD_DIR names a CMake build directory to build in (default: one under pip's build
directory); one already configured is built as it is (its interpreter must be the installing one's,
as it is for `make`'s build/ and /usr/bin/python3)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = Path(os.environ.get("SCALEMODEL_BUILD_DIR") or Path(self.build_temp).resolve() / "cmake")
        if not (build / "CMakeCache.txt").exists():
            subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                                   f"-DPython_EXECUTABLE={sys.executable}"])
        subprocess.check_call(["cmake", "--build", str(build), "--target", "_core", "-j", str(os.cpu_count() or 1)])
        built = sorted((build / "python" / "scalemodel").glob("_core*.so"))
        if not built:
            sys.exit(f"scalemodel: the engine was not built in {build} (pybind11 missing? run scripts/install-deps.sh)")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


# setuptools' own build files go under build/pip, beside (not inside) the CMake build's outputs.
setup(packages=["scalemodel"], package_dir={"": "python"}, package_data={"scalemodel": ["py.typed", "_core.pyi"]},
      ext_modules=[Extension("scalemodel._core", sources=[])], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": "build/pip"}})
