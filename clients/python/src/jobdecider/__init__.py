"""Generated protobuf and gRPC modules of the job-decider contract (package jobdecider.v1).

Everything in jobdecider/v1 is written by `buf generate` (see buf.gen.yaml), which is why it has
no __init__.py: it is a namespace subpackage, and the directory holds only generated files. This
file and py.typed are not generated. Most callers import job_decider instead.
"""
