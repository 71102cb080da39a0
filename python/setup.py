"""pip install ./python: builds the extension with the project's CMake build (docs/python.md).

NCCL_INSPECTOR_BUILD_DIR=DIR reuses an existing build directory (configured from this source tree) instead of
configuring a fresh Release build under pip's build directory. No network is needed: setuptools, CMake, a C++
compiler and the project's build dependencies (scripts/setup-deps.sh --build, pybind11-dev, python3-dev) are.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def version():
    m = re.search(r"project\(nccl_inspector VERSION ([0-9.]+)", open(os.path.join(ROOT, "CMakeLists.txt")).read())
    return m.group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("NCCL_INSPECTOR_BUILD_DIR") or os.path.join(os.path.abspath(self.build_temp), "cmake")
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            subprocess.run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                            "-DNCCL_INSPECTOR_TESTS=OFF", "-DNCCL_INSPECTOR_BENCHMARKS=OFF",
                            "-DPython3_EXECUTABLE=" + sys.executable], check=True)
        subprocess.run(["cmake", "--build", build, "--target", "ni_python_core", "-j", str(os.cpu_count() or 1)],
                       check=True)
        built = glob.glob(os.path.join(build, "python", "nccl_inspector", "_core*.so"))
        if len(built) != 1:
            raise RuntimeError(f"the build made no single nccl_inspector/_core*.so under {build}: {built}")
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        if not built[0].endswith(suffix):
            raise RuntimeError(f"{built[0]} was built for another Python than {sys.executable} ({suffix}): "
                               "configure the build with -DPython3_EXECUTABLE=" + sys.executable)
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[0], dest)


setup(
    name="nccl-inspector",
    version=version(),
    description="nccl-inspector's NCCL profiler logs and analyses as pandas DataFrames",
    license="Apache-2.0",
    packages=["nccl_inspector"],
    ext_modules=[Extension("nccl_inspector._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    install_requires=["pandas"],
    python_requires=">=3.9",
    zip_safe=False,
)
