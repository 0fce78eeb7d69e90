"""First contact with a machine: does training run here, and how large and fast is a real-size step?

    from pods.firstcontact.gpucheck import run_variant     # a few real steps of one backend variant, checked
    from pods.firstcontact.sizecheck import run_random     # random weights of the real sizes, nothing downloaded

Behind `pods gpu-check` (pods/commands/gpu_check.py) and scripts/offline_gpu_check.sh; docs/gpu.md.
"""
