"""Hand-written backend code: what is unique per backend and cannot be generated.

`layout`, `errors` and `params` are the core types shared by every backend and by the
generated package; `cpu`, `cuda`, `rocm` are the backend runtime modules named in ops.yaml.

Importing a runtime module loads what it imports and no more: the GPU ones import
generated.kernel_facts, and the generated package imports nothing on its own (its names and
the backend runtime modules load on first use), so no order between the two is needed.
"""
