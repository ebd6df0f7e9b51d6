"""Fleet memory: results remembered per node and GPU, and what the scheduler is told to do."""
