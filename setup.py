from setuptools import find_packages, setup

setup(
    name="spartan",
    version="0.1.0",
    description="Distributed NumPy on Ray with automatic tiling",
    packages=find_packages(include=["spartan", "spartan.*"]),
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.26",
        "ray[default]>=2.40",
        "cloudpickle>=2.0",
        "msgpack>=1.0",
        "scipy>=1.10",
        "psutil",
        "tqdm",
    ],
    extras_require={
        "test": ["pytest>=7", "hypothesis>=6", "ruff", "matplotlib"],
        "bench": ["dask[array,distributed]>=2024.1", "psutil", "matplotlib", "tqdm"],
        "gpu": ["cupy-cuda12x>=13"],  # CUDA 12.x drivers
        "gpu-cuda13": ["cupy-cuda13x>=13"],  # CUDA 13.x drivers
        "torch": ["torch"],
    },
    entry_points={"console_scripts": ["spartan=spartan.cli:main"]},
)
