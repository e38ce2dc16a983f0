"""Table grids: repairing collapsed spans, reading pipe text, spotting one-cell-per-line output."""
