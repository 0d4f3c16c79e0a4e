"""opgen: generate a multi-backend tensor package from one op registry (ops.yaml).

Data flows one way: load -> validate -> model -> render -> write. Each module owns one step.
"""

__version__ = "0.1.0"
