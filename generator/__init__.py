"""opgen: generate a multi-backend tensor package from one op registry (ops.yaml).

Data flows one way, a subpackage or module per stage: registry/ (load ops.yaml, validate it,
report every problem at once) -> model.py (the frozen, typed registry) and dispatch.py (each
backend's arm of each op; contract.py, what a runtime module must define for them) ->
targets/ (render python, rust, hip) -> output/ (write, check, patch). Beside the pipeline:
audit/ (`gen audit`) and tools/ (new-backend, parity, docs, demo); cli.py is `gen`.
"""

__version__ = "0.1.0"
