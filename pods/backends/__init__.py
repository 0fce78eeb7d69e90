"""Backends: who samples rollouts (`Generator`) and who holds the trainable model (`Policy`).

`pods.backends.base` defines the two small interfaces. Implementations are imported lazily by
name through `pods.backends.build` so that GPU-only libraries (Unsloth, CUDA vLLM) are only
imported when their backend is chosen.
"""
