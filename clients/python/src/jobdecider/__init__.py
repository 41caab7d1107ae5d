"""Generated protobuf and gRPC modules of the job-decider contract (package jobdecider.v1).

The modules under jobdecider/v1 are written by `buf generate` (see buf.gen.yaml); this file and
jobdecider/v1/__init__.py are not generated. Most callers import job_decider instead.
"""
