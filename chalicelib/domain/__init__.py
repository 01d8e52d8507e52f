"""Pure rules of assay: no AWS SDK, no clock reads, no settings read from the process.

Everything here takes plain data (and `now` where time matters) and returns plain data.
"""
