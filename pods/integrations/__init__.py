"""Integrations of PODS into other training frameworks.

- `pods.integrations.trl`: `PODSConfig` / `PODSTrainer`, PODS as a TRL `GRPOTrainer` subclass
  (multi-GPU through accelerate / DeepSpeed; see docs/multi-gpu.md).

Nothing here is imported by `pods` itself, so TRL is only loaded when an integration is used.
"""
