"""Text algorithms with guaranteed bounds (no backtracking regexes): tandem-repeat runs, shingles."""
