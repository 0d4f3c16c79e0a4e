"""Commands around the pipeline: scaffold a new backend (new_backend, scaffold, registry_edit),
the op x backend parity table (parity), the op reference (docs), and the demo of the
generated package (demo)."""
