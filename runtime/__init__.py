"""Hand-written backend code: what is unique per backend and cannot be generated.

`layout`, `errors` and `params` are the core types shared by every backend and by the
generated package; `cpu`, `cuda`, `rocm` are the backend runtime modules named in ops.yaml.
"""

# The generated package first, whichever runtime module is imported: it imports the backend
# runtime modules, and the GPU ones import its kernel facts (generated/kernel_facts.py);
# entering through it always keeps that cycle in the one order that works.
import generated as _generated  # noqa: F401,E402
