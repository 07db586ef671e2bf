"""The project's benchmarks (docs/DESIGN.md §7): synthetic transcripts by size, figures against floors.

`python -m benchmarks` runs them all; `python -m benchmarks --small` is the quick variant.
"""
