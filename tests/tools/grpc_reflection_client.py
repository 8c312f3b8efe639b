#!/usr/bin/env python3
"""A gRPC client that is not gpubench's: Python's grpcio with the standard
health and reflection services, and no gpubench proto file. It checks the
daemon's health, lists its services through reflection, then calls
BenchService.GetHostInfo with message classes built from the descriptors
reflection returned, and prints one line per step:

    health SERVING
    services gpubench.v1.BenchService grpc.health.v1.Health ...
    GetHostInfo host_id=...

A failed step prints its gRPC status code in place of the result.

    grpc_reflection_client.py HOST:PORT [TOKEN]
"""
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc


def message_class(descriptor):
    try:
        return message_factory.GetMessageClass(descriptor)
    except AttributeError:  # protobuf < 4.22
        return message_factory.MessageFactory(descriptor.file.pool).GetPrototype(descriptor)


def reflect(stub, metadata, **request):
    # The first answer ends the exchange: the stream is cancelled rather than
    # left open for the channel's threads to wait on at exit.
    call = stub.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(**request)]), metadata=metadata,
        timeout=10)
    try:
        return next(call)
    finally:
        call.cancel()


def main(address, token):
    with grpc.insecure_channel(address) as channel:
        steps(channel, [("authorization", "Bearer " + token)] if token else [])


def steps(channel, metadata):
    try:
        health = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=""), timeout=10)
        print("health", health_pb2.HealthCheckResponse.ServingStatus.Name(health.status))
    except grpc.RpcError as e:
        print("health", e.code().name)
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    try:
        listed = reflect(stub, metadata, list_services="")
    except grpc.RpcError as e:
        print("services", e.code().name)
        return
    print("services", " ".join(sorted(s.name for s in listed.list_services_response.service)))
    files = reflect(stub, metadata, file_containing_symbol="gpubench.v1.BenchService")
    protos = [descriptor_pb2.FileDescriptorProto.FromString(b)
              for b in files.file_descriptor_response.file_descriptor_proto]
    pool = descriptor_pool.DescriptorPool()
    added = set()
    while len(added) < len(protos):  # each file after the files it imports
        progress = False
        for p in protos:
            if p.name not in added and all(d in added for d in p.dependency):
                pool.Add(p)
                added.add(p.name)
                progress = True
        if not progress:
            print("GetHostInfo", "missing imports:",
                  sorted({d for p in protos for d in p.dependency} - added))
            return
    method = pool.FindServiceByName("gpubench.v1.BenchService").methods_by_name["GetHostInfo"]
    request, response = message_class(method.input_type), message_class(method.output_type)
    call = channel.unary_unary("/gpubench.v1.BenchService/GetHostInfo",
                               request_serializer=request.SerializeToString,
                               response_deserializer=response.FromString)
    try:
        reply = call(request(), metadata=metadata, timeout=10)
        print("GetHostInfo host_id=" + reply.host.host_id)
    except grpc.RpcError as e:
        print("GetHostInfo", e.code().name)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
