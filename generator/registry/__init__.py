"""The registry stage: ops.yaml's text -> positioned nodes (loader) -> checked against its
shape (spec) and the hand-written sources it names (runtime_scan, kernel_sigs) -> the frozen
model (validate), or every problem at once (diagnostics). Also: where each entry is declared
(declared) and a target's API profile, how one library spells the registry (profile)."""
