"""Fleet memory: results per node and GPU, the diff against the last good run, scheduler actions."""
