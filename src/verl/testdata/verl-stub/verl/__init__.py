"""A stub of verl (tests only): the agent-loop interface of verl 0.7.1, nothing else."""
