"""jobdecider.v1: the generated modules (job_decider_pb2, job_decider_pb2_grpc, ...)."""
