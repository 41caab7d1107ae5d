"""Decides a Job and its pods, as kubectl prints them: quickstart.py JOB.json PODS.json"""

import os
import sys

from google.protobuf.json_format import MessageToJson

from jobdecider import Client, decide_job_request

job_json, pods_json = (open(path).read() for path in sys.argv[1:3])
request = decide_job_request(job_json, pods_json)  # `now` is the current time
with Client(os.environ.get("JOB_DECIDER_ADDR", "127.0.0.1:50051")) as client:
    plan = client.decide_job(request)
for action in plan.actions:
    print(MessageToJson(action, indent=None))
