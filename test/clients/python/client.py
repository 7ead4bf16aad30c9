"""A gRPC client of the gateway built from code that buf generates out of proto/gw with
test/clients/buf.gen.python.yaml; test/integration/generated-clients.test.ts runs it and asserts on the JSON
it prints. It reads the gateway's address, an admin session token, a virtual key and the values to send from
the environment."""

import json
import os

import grpc
from google.protobuf import field_mask_pb2

from gw.catalog.v1 import catalog_pb2, catalog_pb2_grpc
from gw.inference.v1 import tool_pb2, tool_pb2_grpc

# A bound on each call, so that a gateway that never answers fails the test instead of hanging it.
DEADLINE = 60


def error_of(call):
    try:
        call()
    except grpc.RpcError as err:
        return {"code": err.code().value[0], "message": err.details()}
    return None


def main():
    admin = (("authorization", "Bearer " + os.environ["GW_ADMIN_TOKEN"]),)
    caller = (("x-gw-vk", os.environ["GW_VIRTUAL_KEY"]),)
    out = {}
    # The gateway is on this machine: a proxy named in the environment would not reach it.
    with grpc.insecure_channel(os.environ["GW_ADDRESS"], options=(("grpc.enable_http_proxy", 0),)) as channel:
        providers = catalog_pb2_grpc.ProviderServiceStub(channel)
        tools = tool_pb2_grpc.McpToolServiceStub(channel)

        listed = providers.ListProviders(catalog_pb2.ListProvidersRequest(), metadata=admin, timeout=DEADLINE)
        out["list"] = {"names": [p.name for p in listed.providers]}

        updated = providers.UpdateProvider(
            catalog_pb2.UpdateProviderRequest(
                name="openai",
                provider=catalog_pb2.Provider(
                    network_config=catalog_pb2.NetworkConfig(
                        default_request_timeout_in_seconds=int(os.environ["GW_TIMEOUT_SECONDS"])
                    )
                ),
                update_mask=field_mask_pb2.FieldMask(paths=["network_config.default_request_timeout_in_seconds"]),
            ),
            metadata=admin,
            timeout=DEADLINE,
        )
        network = updated.provider.network_config
        out["update"] = {
            "base_url": network.base_url,
            "default_request_timeout_in_seconds": network.default_request_timeout_in_seconds,
            "stream_idle_timeout_in_seconds": network.stream_idle_timeout_in_seconds,
            "keys": len(updated.provider.keys),
        }

        result = tools.ExecuteTool(
            tool_pb2.ExecuteToolRequest(
                id="call_python",
                type="function",
                function=tool_pb2.FunctionCall(
                    name=os.environ["GW_TOOL"], arguments=json.dumps({"text": os.environ["GW_TOOL_TEXT"]})
                ),
            ),
            metadata=caller,
            timeout=DEADLINE,
        )
        out["tool"] = {"role": result.role, "tool_call_id": result.tool_call_id, "content": result.content}

        out["not_found"] = error_of(
            lambda: providers.GetProvider(
                catalog_pb2.GetProviderRequest(name="no-such-provider"), metadata=admin, timeout=DEADLINE
            )
        )
        out["invalid_argument"] = error_of(
            lambda: providers.UpdateProvider(
                catalog_pb2.UpdateProviderRequest(
                    name="openai",
                    provider=catalog_pb2.Provider(),
                    update_mask=field_mask_pb2.FieldMask(paths=["network_config.base_uri"]),
                ),
                metadata=admin,
                timeout=DEADLINE,
            )
        )
        out["unauthenticated"] = error_of(
            lambda: providers.ListProviders(catalog_pb2.ListProvidersRequest(), timeout=DEADLINE)
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
