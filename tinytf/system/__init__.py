"""The system a stage runs on: the allocator and garbage-collector settings every stage process
applies, the CPU's bf16 facts, and the run record (wall time, commit, machine, versions)."""
