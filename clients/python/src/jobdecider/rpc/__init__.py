"""google.rpc's Status and error details, typed: `from jobdecider.rpc import error_details_pb2`.

The modules are googleapis-common-protos' own (`jobdecider.rpc.error_details_pb2.BadRequest` is
`google.rpc.error_details_pb2.BadRequest`); this package adds their type stubs, which mypy
cannot use from google.rpc (it ships .pyi files without a py.typed marker). The stubs are
written by codegen/gen_rpc_stubs.sh.
"""
