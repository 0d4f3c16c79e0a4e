"""The output stage: bring each target's folder in line with the rendered files, atomically
(writer, atomic), skip runs where nothing changed (stamp), and show staleness as unified diffs
(diff) and a patch file (patch)."""
