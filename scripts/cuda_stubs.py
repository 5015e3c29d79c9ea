#!/usr/bin/env python3
"""Link-only stubs of the CUDA libraries that candle's CUDA build has cudarc link
and that no wheel here ships (scripts/cuda-toolkit.sh says why).

For each library, every function cudarc's bindings declare (read from the cudarc
source cargo resolved for candle/) becomes a C function returning 34
(CUDA_ERROR_STUB_LIBRARY), in a shared object with the real library's soname:
OUT/lib<name>.so for the linker, and OUT/run/<soname> for a test binary run on a
machine without CUDA, where the stub driver makes every GPU test skip as on any
machine without a GPU.
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (cudarc module, symbol prefix, link name, soname of the CUDA 13.0 library)
LIBRARIES = [
    ("driver", r"cu[A-Z]\w*", "cuda", "libcuda.so.1"),
    ("cublas", r"cublas\w*", "cublas", "libcublas.so.13"),
    ("cublaslt", r"cublasLt\w*", "cublasLt", "libcublasLt.so.13"),
    ("curand", r"curand\w*", "curand", "libcurand.so.10"),
    ("nccl", r"p?nccl\w*", "nccl", "libnccl.so.2"),
]


def cudarc_src():
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--manifest-path",
         os.path.join(ROOT, "candle", "Cargo.toml")],
        check=True, capture_output=True, text=True).stdout
    for pkg in json.loads(meta)["packages"]:
        if pkg["name"] == "cudarc":
            return os.path.join(os.path.dirname(pkg["manifest_path"]), "src")
    sys.exit("cuda_stubs.py: cargo metadata of candle/ lists no cudarc")


def main():
    out = sys.argv[1]
    run = os.path.join(out, "run")
    os.makedirs(run, exist_ok=True)
    src = cudarc_src()
    for module, prefix, link, soname in LIBRARIES:
        with open(os.path.join(src, module, "sys", "mod.rs")) as f:
            names = sorted(set(re.findall(r"pub unsafe fn (" + prefix + r")\s*\(", f.read())))
        if not names:
            sys.exit(f"cuda_stubs.py: no functions found in cudarc's {module} bindings")
        c = os.path.join(out, f"{link}.c")
        with open(c, "w") as f:
            f.writelines(f"int {n}(void) {{ return 34; }}\n" for n in names)
        lib = os.path.join(out, f"lib{link}.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-O0", f"-Wl,-soname,{soname}", c, "-o", lib], check=True)
        os.replace(lib, os.path.join(run, soname))
        os.symlink(os.path.join("run", soname), lib)
        print(f"cuda_stubs.py: {soname}: {len(names)} functions", file=sys.stderr)
    open(os.path.join(out, ".done"), "w").close()


if __name__ == "__main__":
    main()
