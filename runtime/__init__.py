"""Hand-written backend code: what is unique per backend and cannot be generated.

`layout`, `errors` and `params` are the core types shared by every backend and by the
generated package; `cpu`, `cuda`, `rocm` are the backend runtime modules named in ops.yaml.
"""
