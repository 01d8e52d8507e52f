"""Use cases of assay; they talk to storage, queues and agents only through the ports."""
