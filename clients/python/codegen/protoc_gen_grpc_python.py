"""A protoc plugin that runs grpc's Python service generator, for `buf generate`.

grpc ships its Python generator only inside grpcio-tools' protoc (`--grpc_python_out`), not as a
protoc-gen-* program, and buf's protoc_builtin knows only protoc's own generators. This plugin
takes buf's CodeGeneratorRequest, hands the same descriptors to grpc_tools.protoc and returns
what it writes, so the gRPC modules come from the pinned grpcio-tools like the rest.
"""

from __future__ import annotations

import os
import sys
import tempfile

from google.protobuf import descriptor_pb2
from google.protobuf.compiler import plugin_pb2
from grpc_tools import protoc


def generate(request: plugin_pb2.CodeGeneratorRequest) -> plugin_pb2.CodeGeneratorResponse:
    """Runs grpc_tools.protoc's grpc_python generator over the request's files."""
    response = plugin_pb2.CodeGeneratorResponse()
    # grpc_tools' generator handles proto3 optional fields.
    response.supported_features = plugin_pb2.CodeGeneratorResponse.FEATURE_PROTO3_OPTIONAL
    with tempfile.TemporaryDirectory() as tmp:
        descriptors = os.path.join(tmp, "descriptors.binpb")
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        with open(descriptors, "wb") as f:
            f.write(descriptor_pb2.FileDescriptorSet(file=request.proto_file).SerializeToString())
        target = f"{request.parameter}:{out}" if request.parameter else out
        args = ["grpc_tools.protoc", f"--descriptor_set_in={descriptors}", f"--grpc_python_out={target}"]
        status = protoc.main([*args, *request.file_to_generate])
        if status != 0:
            response.error = f"grpc_tools.protoc --grpc_python_out exited with {status}"
            return response
        for directory, _, names in os.walk(out):
            for name in sorted(names):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as f:
                    response.file.add(name=os.path.relpath(path, out), content=f.read())
    return response


def main() -> None:
    """Reads a CodeGeneratorRequest on stdin and writes the CodeGeneratorResponse to stdout."""
    request = plugin_pb2.CodeGeneratorRequest.FromString(sys.stdin.buffer.read())
    sys.stdout.buffer.write(generate(request).SerializeToString())


if __name__ == "__main__":
    main()
