"""Table services: each is plan -> execute -> commit, resumable from the timeline alone."""
