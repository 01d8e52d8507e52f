"""Pure rules of assay: no boto3, no clock reads, no environment reads.

Everything here takes plain data (and `now` where time matters) and returns plain data.
"""
